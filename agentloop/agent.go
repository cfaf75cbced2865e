package agentloop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session/live"
)

// Sentinel errors of [Agent.Run].
var (
	// ErrClosed is returned by Run on an agent that was closed.
	ErrClosed = errors.New("agentloop: agent closed")
	// ErrBusy is returned by Run when the session already has a turn in
	// progress in this agent.
	ErrBusy = errors.New("agentloop: session has a turn in progress")
)

// DefaultMaxSteps bounds the steps of a turn when Config.MaxSteps is zero.
const DefaultMaxSteps = 8

// DefaultMaxAttempts bounds the provider attempts of a step when
// Config.MaxAttempts is zero.
const DefaultMaxAttempts = 4

// DefaultToolGrace is how long a cancelled turn waits for its running
// tools when Config.ToolGrace is zero.
const DefaultToolGrace = 3 * time.Second

// Config configures an agent. Its model-visible fields (system, model,
// temperature, max_tokens, stop) go into the request header.
type Config struct {
	// System is the system prompt.
	System string `yaml:"system" doc:"The system prompt."`
	// Model names the model; empty lets the provider choose its default.
	Model string `yaml:"model" doc:"Names the model; empty lets the provider choose its default."`
	// MaxSteps bounds the steps of one turn (default 8). A turn whose last
	// allowed step still asked for tools ends with reason max-steps.
	MaxSteps int `yaml:"max_steps" doc:"Bounds the steps of one turn (default 8). A turn whose last allowed step still asked for tools ends with reason max-steps."`
	// Temperature, when set, is sent with every request.
	Temperature *float64 `yaml:"temperature" doc:"When set, is sent with every request."`
	// MaxTokens, when positive, bounds each reply.
	MaxTokens int `yaml:"max_tokens" doc:"When positive, bounds each reply."`
	// Stop lists stop sequences.
	Stop []string `yaml:"stop" doc:"Lists stop sequences."`
	// MaxAttempts bounds how often one step's request is sent when the
	// provider fails with a retryable error before any chunk (default 4).
	MaxAttempts int `yaml:"max_attempts" doc:"Bounds how often one step's request is sent when the provider fails with a retryable error before any chunk (default 4)."`
	// ToolGrace is how long a cancelled turn waits for a running tool to
	// return before it abandons the call with a TOOL_ABANDONED result
	// (default 3s).
	ToolGrace time.Duration `yaml:"tool_grace" doc:"How long a cancelled turn waits for a running tool to return before it abandons the call with a TOOL_ABANDONED result (default 3s)."`
	// OutputSchema, when set, is a JSON Schema the final answer of every
	// turn must match. It goes into the request header (output_schema),
	// so providers ask for it with their structured-output modes; an
	// answer that does not match gets one retry, with the problems as a
	// user/message of origin output-validation, and then ends the turn
	// with an [*OutputError]. The schema must compile (draft 2020-12
	// unless it names its $schema) and refer to nothing outside itself.
	OutputSchema map[string]any `yaml:"output_schema" doc:"When set, is a JSON Schema the final answer of every turn must match. It goes into the request header (output_schema), so providers ask for it with their structured-output modes; an answer that does not match gets one retry, with the problems as a user/message of origin output-validation, and then ends the turn with an [*OutputError]. The schema must compile (draft 2020-12 unless it names its $schema) and refer to nothing outside itself."`
	// Delegation composes several agents (subagent.go).
	Delegation `yaml:",inline"`
}

// Validate checks the config.
func (c *Config) Validate() error {
	var errs []error
	if c.MaxSteps < 0 {
		errs = append(errs, errors.New("max_steps must not be negative"))
	}
	if c.MaxTokens < 0 {
		errs = append(errs, errors.New("max_tokens must not be negative"))
	}
	if c.MaxAttempts < 0 {
		errs = append(errs, errors.New("max_attempts must not be negative"))
	}
	if c.ToolGrace < 0 {
		errs = append(errs, errors.New("tool_grace must not be negative"))
	}
	if t := c.Temperature; t != nil && (*t < 0 || *t > 2) {
		errs = append(errs, fmt.Errorf("temperature %v is outside [0, 2]", *t))
	}
	if _, err := compileOutputSchema(c.OutputSchema); err != nil {
		errs = append(errs, err)
	}
	if err := c.Delegation.validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// AgentService is the service the agent plugin provides, for hosts
// (package vigil, cmd/vigil) that run turns.
var AgentService = bus.NewService[*Agent]("agent/loop")

// Agent runs turns of the agent loop on sessions. One Agent is one loop
// instance: the first turn it runs on a session that already has a request
// header logs the header again with reason resume. An Agent is safe for
// concurrent use on different sessions; one session runs one turn at a
// time.
type Agent struct {
	c        *bus.Context
	id       string
	cfg      Config
	provider func() (Provider, error)
	tools    func() ([]Tool, error)
	// fixedTools: the tools were given (WithTools), not read from services.
	fixedTools bool
	backoff    Backoff
	// denialsInPlace: a step's denials are logged in the model's call
	// order (see [WithDenialsInCallOrder]).
	denialsInPlace bool
	// schema is cfg.OutputSchema compiled; schemaErr why it did not
	// compile (a Config that was not validated), which fails every turn.
	schema    *outputSchema
	schemaErr error

	mu       sync.Mutex
	sessions map[string]*sessionState // by session id
	cancels  map[*int]context.CancelFunc

	statusMu sync.Mutex // serializes status changes and their announcements
	status   Status
	running  int
	closed   bool
	wg       sync.WaitGroup
}

type sessionState struct {
	sess   *live.Session // the copy of the session the state is of
	closed bool          // the session closed: dropped once not busy
	busy   bool
	headed bool     // this agent has logged or confirmed a header in the session
	dig    digester // request digests of the session, incrementally
	view   reqView  // the loop's fold of the session and the header copies
	ids    callIDs  // tool-call ids the session's log uses, incrementally
}

// Option configures an [Agent].
type Option func(*Agent)

// WithProvider makes the agent use p instead of the provider service.
func WithProvider(p Provider) Option {
	g := guardProvider(p)
	return func(a *Agent) { a.provider = func() (Provider, error) { return g, nil } }
}

// WithTools makes the agent offer exactly ts instead of the tool services.
func WithTools(ts ...Tool) Option {
	ts = append([]Tool(nil), ts...)
	return func(a *Agent) {
		a.tools = func() ([]Tool, error) { return ts, nil }
		a.fixedTools = true
	}
}

// WithToolSource makes the agent offer, at each step, the tools fn
// returns then instead of the tool services: a tool set that changes
// between steps without the bus (a replay serves each step the tools its
// recording had in force then). Like [WithTools], it does not wait for
// tool list changes announced on the bus.
func WithToolSource(fn func() ([]Tool, error)) Option {
	return func(a *Agent) {
		a.tools = fn
		a.fixedTools = true
	}
}

// WithBackoff replaces the delay between provider attempts (see
// [DefaultBackoff]); tests use it to retry without waiting.
func WithBackoff(b Backoff) Option {
	return func(a *Agent) {
		if b != nil {
			a.backoff = b
		}
	}
}

// WithDenialsInCallOrder makes the agent log a step's denials (POLICY_DENIED
// and APPROVAL_DENIED results) in the model's call order among its other
// calls, as Vigil did before denials were logged first. A crash while an
// allowed call of the step runs may then lose a denial logged after it,
// so only a replay of a log written that way uses it: its rerun must log
// what the recording holds, in the recording's order.
func WithDenialsInCallOrder() Option {
	return func(a *Agent) { a.denialsInPlace = true }
}

// WithName sets the prefix of the agent's id (default "agent").
func WithName(name string) Option {
	return func(a *Agent) { a.id = fmt.Sprintf("%s#%d", name, agentSeq.Add(1)) }
}

var agentSeq atomic.Int64

// New returns an idle agent that emits its events through c. By default
// it reads the provider from [ProviderService] and the tools from every
// service under [ToolServicePrefix] through c, at each step; c must be
// allowed to read them (the root context, or a plugin that declares
// "llm/provider" and "tool/*").
func New(c *bus.Context, cfg Config, opts ...Option) *Agent {
	a := &Agent{
		c:        c,
		cfg:      cfg,
		backoff:  DefaultBackoff,
		status:   StatusIdle,
		sessions: map[string]*sessionState{},
		cancels:  map[*int]context.CancelFunc{},
	}
	a.provider = func() (Provider, error) { return ProviderService.Get(c) }
	a.tools = func() ([]Tool, error) {
		named, err := bus.Lookup[Tool](c, ToolServicePrefix)
		if err != nil {
			return nil, err
		}
		out := make([]Tool, len(named))
		for i, n := range named {
			out[i] = n.Value
		}
		return out, nil
	}
	WithName("agent")(a)
	for _, o := range opts {
		o(a)
	}
	if !a.fixedTools {
		all := a.tools
		a.tools = func() ([]Tool, error) {
			ts, err := all()
			if err != nil {
				return nil, err
			}
			return a.cfg.selectTools(ts), nil
		}
	}
	if a.cfg.MaxSteps == 0 {
		a.cfg.MaxSteps = DefaultMaxSteps
	}
	if a.cfg.MaxAttempts == 0 {
		a.cfg.MaxAttempts = DefaultMaxAttempts
	}
	if a.cfg.ToolGrace == 0 {
		a.cfg.ToolGrace = DefaultToolGrace
	}
	a.schema, a.schemaErr = compileOutputSchema(a.cfg.OutputSchema)
	return a
}

// ID returns the agent instance's id, as announced on agent/status.
func (a *Agent) ID() string { return a.id }

// Config returns the agent's config with defaults filled in, for a host
// that shows what the agent runs with.
func (a *Agent) Config() Config { return a.cfg }

// Status returns the agent's current status, for a host that shows it
// (agent/status announces every change).
func (a *Agent) Status() Status {
	a.statusMu.Lock()
	defer a.statusMu.Unlock()
	return a.status
}

// setStatusLocked announces and records a transition; a refused
// transition leaves the status unchanged. a.statusMu is held.
func (a *Agent) setStatusLocked(ctx context.Context, to Status) error {
	if a.status == to {
		return nil
	}
	ch := StatusChange{Agent: a.id, From: a.status, To: to}
	if err := StatusEvent.Emit(ctx, a.c, ch); err != nil {
		return fmt.Errorf("agentloop: agent/status %s → %s: %w", ch.From, ch.To, err)
	}
	a.status = to
	return nil
}

// begin counts a run in; the first one makes the agent running.
func (a *Agent) begin(ctx context.Context) error {
	a.statusMu.Lock()
	defer a.statusMu.Unlock()
	if a.closed {
		return ErrClosed
	}
	if a.running == 0 {
		if err := a.setStatusLocked(ctx, StatusRunning); err != nil {
			return err
		}
	}
	a.running++
	a.wg.Add(1)
	return nil
}

// end counts a run out; the last one makes the agent idle again, unless
// it is being closed (then Close announces disposed from running).
func (a *Agent) end(ctx context.Context) {
	a.statusMu.Lock()
	defer a.statusMu.Unlock()
	a.running--
	if a.running == 0 && !a.closed {
		if err := a.setStatusLocked(context.WithoutCancel(ctx), StatusIdle); err != nil {
			a.c.Logger().Error("status change refused", "agent", a.id, "error", err)
		}
	}
	a.wg.Done()
}

// Close cancels the turns in progress, waits for them to log their end,
// and disposes the agent. Closing twice does nothing.
func (a *Agent) Close() error {
	a.statusMu.Lock()
	if a.closed {
		a.statusMu.Unlock()
		return nil
	}
	a.closed = true
	a.statusMu.Unlock()

	a.mu.Lock()
	for _, cancel := range a.cancels {
		cancel()
	}
	a.mu.Unlock()
	a.wg.Wait()

	a.statusMu.Lock()
	defer a.statusMu.Unlock()
	return a.setStatusLocked(context.Background(), StatusDisposed)
}

// claim marks sess busy in this agent and returns its state, made at
// the first turn on this copy of the session and kept for its lifetime:
// the session's close drops it (see [live.Session.OnClose]).
func (a *Agent) claim(sess *live.Session, cancel context.CancelFunc) (key *int, st *sessionState, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st = a.sessions[sess.ID()]
	if st != nil && st.busy {
		return nil, nil, fmt.Errorf("%w: %s", ErrBusy, sess.ID())
	}
	if st == nil || st.sess != sess {
		st = &sessionState{sess: sess}
		a.sessions[sess.ID()] = st
		if !sess.OnClose(func() { a.forget(st) }) {
			st.closed = true
		}
	}
	st.busy = true
	key = new(int)
	a.cancels[key] = cancel
	return key, st, nil
}

func (a *Agent) release(st *sessionState, key *int, headed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.busy = false
	st.headed = st.headed || headed
	delete(a.cancels, key)
	if st.closed {
		a.dropLocked(st)
	}
}

// forget drops the state of a session that closed; a turn still running
// on it drops it as it ends.
func (a *Agent) forget(st *sessionState) {
	a.mu.Lock()
	defer a.mu.Unlock()
	st.closed = true
	if !st.busy {
		a.dropLocked(st)
	}
}

func (a *Agent) dropLocked(st *sessionState) {
	if a.sessions[st.sess.ID()] == st {
		delete(a.sessions, st.sess.ID())
	}
}
