package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// CodeSubagentFailed is the error code of a delegation's tool/result when
// the sub-agent's turn did not complete (it failed, was aborted, hit its
// step limit, or asked again after its call was decided); the model sees
// it like any tool error.
const CodeSubagentFailed = "SUBAGENT_FAILED"

// Delegation is the part of an agent's [Config] that composes several
// agents: which tools it offers, which provider entry it uses, and whether
// it is itself offered to other agents as a tool.
type Delegation struct {
	// Provider names the provider entry (its id in plugins.yaml) the agent
	// uses; empty: the one provider service.
	Provider Ref `yaml:"provider" doc:"the id of the provider entry this agent uses (when several are mounted)"`
	// Tools selects the tools the agent offers by name or path.Match
	// pattern ("fs_*"). Absent (nil): every tool but the other agents
	// offered as tools, which an agent must name to delegate to them;
	// empty: none.
	Tools []Ref `yaml:"tools" doc:"tool names or glob patterns this agent offers (default: every tool but sub-agents)"`
	// AsTool offers the agent to other agents as a tool: calling it runs a
	// turn of this agent in a child session.
	AsTool *AsTool `yaml:"as_tool" doc:"offer this agent to other agents as a tool"`

	entry string // the entry's id, from the loader (SetEntryID)
	// notMain: another agent of the composition is also offered to no
	// one, so this one is the entry point only when named (--agent).
	notMain bool
}

// AsTool is how an agent is offered to others as a tool.
type AsTool struct {
	// Name is the tool's name.
	Name string `yaml:"name" vigil:"required" doc:"the tool's name"`
	// Description is shown to the model.
	Description string `yaml:"description" doc:"the tool's description, shown to the model"`
	// Parameters is the JSON Schema of the arguments; absent:
	// {"task": string}, required, whose value is the child's user message.
	// With custom parameters the user message is the arguments' JSON.
	Parameters map[string]any `yaml:"parameters" doc:"JSON Schema of the arguments (default: a required string task)"`
}

// Ref is a name written in a config, with where it was written so that a
// check of the whole composition can point at it (line and column are
// zero for a config built in Go).
type Ref struct {
	Name      string
	Line, Col int
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (r *Ref) UnmarshalText(b []byte) error { r.Name = string(b); return nil }

// MarshalText implements encoding.TextMarshaler: only the name counts.
func (r Ref) MarshalText() ([]byte, error) { return []byte(r.Name), nil }

// SetPosition records where the name was written (the config loader
// calls it).
func (r *Ref) SetPosition(line, col int) { r.Line, r.Col = line, col }

// Refs makes refs of names, for configs built in Go.
func Refs(names ...string) []Ref {
	out := make([]Ref, len(names))
	for i, n := range names {
		out[i] = Ref{Name: n}
	}
	return out
}

// SetEntryID implements the loader's hook: the agent learns its entry id,
// which other agents and `vigil run --agent` name it by.
func (c *Config) SetEntryID(id string) { c.entry = id }

// EntryID returns the id of the agent's entry ("" for an agent not built
// from a composition).
func (c *Config) EntryID() string { return c.entry }

func (d *Delegation) validate() error {
	var errs []error
	for _, r := range d.Tools {
		if _, err := path.Match(r.Name, ""); err != nil || r.Name == "" {
			errs = append(errs, fmt.Errorf("tools: %q is not a name or pattern", r.Name))
		}
	}
	if t := d.AsTool; t != nil {
		if t.Name == "" {
			errs = append(errs, errors.New("as_tool: name is required"))
		}
		if t.Parameters != nil {
			if typ, _ := t.Parameters["type"].(string); typ != "object" {
				errs = append(errs, errors.New(`as_tool: parameters must be a JSON Schema of "type": "object"`))
			} else if _, err := json.Marshal(t.Parameters); err != nil {
				errs = append(errs, fmt.Errorf("as_tool: parameters: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// PositionError is an error at a place in the config file.
type PositionError struct {
	Line, Col int
	Err       error
}

func (e *PositionError) Error() string { return e.Err.Error() }
func (e *PositionError) Unwrap() error { return e.Err }

// Position returns where the error is (the loader reads it).
func (e *PositionError) Position() (line, col int) { return e.Line, e.Col }

// ErrAgentCycle is matched by the error of agents offered to each other in
// a cycle.
var ErrAgentCycle = errors.New("agents delegate to each other in a cycle")

// ErrUnknownRef is matched by the error of a tool pattern or provider
// that names nothing in the composition.
var ErrUnknownRef = errors.New("names nothing in the composition")

// CheckPeers checks the agent against the enabled entries of its
// composition, given as parallel slices of their ids, plugin names and
// decoded configs (the loader calls it once every entry is decoded): a tool
// name or pattern must match a tool an entry declares (an agent's as_tool,
// a config with a ToolNames method) unless an entry provides tools the
// loader cannot know (an MCP server, an external plugin); provider must
// name a provider entry; and agents must not delegate in a cycle. It
// also decides whether the agent is the composition's entry point.
func (c *Config) CheckPeers(ids, names []string, configs []any) error {
	type peer struct {
		ID, Name string
		Config   any
	}
	peers := make([]peer, len(ids))
	for i := range ids {
		peers[i] = peer{ids[i], names[i], configs[i]}
	}
	agents := map[string]*Config{}
	var order []string
	toolOwner := map[string]string{} // as_tool name → agent entry id
	known := map[string]bool{}
	dynamic := false
	providers := map[string]bool{}
	for _, p := range peers {
		switch cfg := p.Config.(type) {
		case *Config:
			agents[p.ID] = cfg
			order = append(order, p.ID)
			if cfg.AsTool != nil {
				toolOwner[cfg.AsTool.Name] = p.ID
				known[cfg.AsTool.Name] = true
			}
			continue
		case interface{ ToolNames() []string }:
			for _, n := range cfg.ToolNames() {
				known[n] = true
			}
			continue
		}
		switch {
		case strings.HasPrefix(p.Name, "provider/"):
			providers[p.ID] = true
		case strings.HasPrefix(p.Name, "tools/"), p.Name == "external":
			dynamic = true // its tools are known only once it runs
		}
	}
	if p := c.Provider; p.Name != "" && !providers[p.Name] {
		return &PositionError{Line: p.Line, Col: p.Col, Err: fmt.Errorf("provider %q %w (provider entries: %s)", p.Name, ErrUnknownRef, strings.Join(sortedKeys(providers), ", "))}
	}
	for _, r := range c.Tools {
		if dynamic {
			break
		}
		if !slices.ContainsFunc(sortedKeys(known), func(n string) bool { ok, _ := path.Match(r.Name, n); return ok }) {
			have := "no entry declares a tool"
			if len(known) > 0 {
				have = "tools: " + strings.Join(sortedKeys(known), ", ")
			}
			return &PositionError{Line: r.Line, Col: r.Col, Err: fmt.Errorf("tool %q %w (%s)", r.Name, ErrUnknownRef, have)}
		}
	}
	// Delegation edges: an agent offers another's as_tool.
	edges := func(id string) []string {
		var out []string
		for _, name := range sortedKeys(toolOwner) {
			if agents[id].offers(name, true) {
				out = append(out, toolOwner[name])
			}
		}
		return out
	}
	if _, ok := agents[c.entry]; !ok {
		return nil
	}
	if cyc := findCycle(c.entry, edges); cyc != nil {
		return fmt.Errorf("%w: %s", ErrAgentCycle, strings.Join(cyc, " → "))
	}
	mains := 0
	for _, id := range order {
		if agents[id].AsTool == nil {
			mains++
		}
	}
	c.notMain = mains > 1
	return nil
}

// findCycle returns a cycle through start, as the ids along it ending
// with start again, or nil.
func findCycle(start string, edges func(string) []string) []string {
	var path []string
	seen := map[string]bool{}
	var walk func(id string) []string
	walk = func(id string) []string {
		path = append(path, id)
		defer func() { path = path[:len(path)-1] }()
		for _, next := range edges(id) {
			if next == start {
				return append(slices.Clone(path), start)
			}
			if !seen[next] {
				seen[next] = true
				if c := walk(next); c != nil {
					return c
				}
			}
		}
		return nil
	}
	return walk(start)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// offers reports whether the agent offers the tool name: it matches one
// of Tools, or Tools is absent and the tool is no sub-agent.
func (d *Delegation) offers(name string, subagent bool) bool {
	if d.Tools == nil {
		return !subagent
	}
	for _, r := range d.Tools {
		if ok, _ := path.Match(r.Name, name); ok {
			return true
		}
	}
	return false
}

// selectTools keeps the tools the config offers, in their order.
func (d *Delegation) selectTools(ts []Tool) []Tool {
	out := ts[:0:0]
	for _, t := range ts {
		_, sub := t.(*delegate)
		if d.offers(t.Spec().Name, sub) {
			out = append(out, t)
		}
	}
	return out
}

// AgentServices holds every agent of a composition by its entry id
// ("agents/" + id), for hosts that run a named agent.
var AgentServices = bus.NewServiceSet[*Agent]("agents/")

// invoker is implemented by tools that need the call itself, not only its
// arguments: a delegation needs the session and the seq of its tool/call.
type invoker interface {
	invoke(ctx context.Context, inv *ToolInvocation) ToolOutput
}

// delegate is an agent offered as a tool: a call runs one turn of the
// agent in a new child session of the caller's session.
type delegate struct {
	a    *Agent
	spec session.ToolSpec
}

func newDelegate(a *Agent, t *AsTool) (*delegate, error) {
	spec, err := t.Spec()
	if err != nil {
		return nil, err
	}
	return &delegate{a: a, spec: spec}, nil
}

// Spec is the tool an agent is offered as: its name, description and
// parameters ([session.TaskParameters] when the config gives none). A
// protocol server offering the agent to clients offers the same tool.
func (t *AsTool) Spec() (session.ToolSpec, error) {
	spec := session.ToolSpec{Name: t.Name, Description: t.Description, Parameters: session.TaskParameters}
	if t.Parameters != nil {
		// Marshalled with sorted keys, never the bytes of the default:
		// the user message is the arguments' JSON (session.DelegatedTask).
		b, err := json.Marshal(t.Parameters)
		if err != nil {
			return session.ToolSpec{}, fmt.Errorf("agentloop: as_tool %s: parameters: %w", t.Name, err)
		}
		spec.Parameters = b
	}
	return spec, nil
}

func (d *delegate) Spec() session.ToolSpec { return d.spec }

// ConcurrencySafe: each call runs in its own child session, so the
// children of one step run concurrently.
func (d *delegate) ConcurrencySafe() bool { return true }

// Execute is not how the loop calls a delegation (it needs the call); a
// Go program calling it directly gets an error.
func (d *delegate) Execute(context.Context, json.RawMessage) (string, error) {
	return "", &ToolError{Code: CodeSubagentFailed, Message: "a sub-agent runs only as a call of a turn"}
}

func (d *delegate) invoke(ctx context.Context, inv *ToolInvocation) ToolOutput {
	mgr, err := live.Sessions.Get(d.a.c)
	if err != nil {
		return subagentFailed(nil, "no session manager: %v", err)
	}
	if inv.decided != nil {
		// A resumed call: its child waits for this decision, unless the
		// call was decided before it ever ran (a session-scoped allow).
		child, err := findChild(ctx, mgr, inv)
		if err != nil {
			return subagentFailed(nil, "finding the sub-agent's session: %v", err)
		}
		if child != nil {
			return d.resumeChild(ctx, child, inv.decided)
		}
		if !inv.decided.Allow {
			return ToolOutput{}
		}
	}
	// The child's user message is what verify --tree checks against the
	// call: one function makes it for both.
	prompt, err := session.DelegatedTask(d.spec.Parameters, inv.Call.Arguments)
	if err != nil {
		return ToolOutput{Error: &session.ToolResultError{Code: CodeInvalidArguments, Message: err.Error()}}
	}
	child, err := mgr.CreateChild(ctx, session.Parent{ID: inv.Session, Seq: inv.CallSeq, Call: inv.Call.ID})
	if err != nil {
		return subagentFailed(nil, "creating the child session: %v", err)
	}
	res, runErr := d.a.Run(ctx, child, prompt)
	return d.outcome(ctx, child, res, runErr, true)
}

// resumeChild decides every call child waits for as d says and resumes
// its turn.
func (d *delegate) resumeChild(ctx context.Context, child *live.Session, dec *session.ApprovalDecision) ToolOutput {
	s := session.Suspended(child.Records())
	if s == nil {
		// Decided and resumed on its own already: its last turn answers.
		return d.outcome(ctx, child, endedTurn(child), nil, false)
	}
	{
		for _, p := range s.Undecided() {
			if _, err := Decide(ctx, child, p.Call.ID, Decision{Allow: dec.Allow, By: dec.By, Reason: dec.Reason}); err != nil {
				_ = child.Close(context.WithoutCancel(ctx))
				return subagentFailed(child, "deciding the sub-agent's call %s: %v", p.Call.ID, err)
			}
		}
	}
	res, err := d.a.Resume(ctx, child)
	return d.outcome(ctx, child, res, err, false)
}

// outcome is the call's output for the child's turn that returned res and
// runErr, once the child's session is released. A child that waits for an
// approval makes the call wait (when wait; a call already decided fails
// instead: one decision answers one request).
func (d *delegate) outcome(ctx context.Context, child *live.Session, res *TurnResult, runErr error, wait bool) ToolOutput {
	// The child's log is complete (or suspended, flushed): release it so
	// that a later reader or writer may open it.
	closeErr := child.Close(context.WithoutCancel(ctx))
	switch {
	case runErr != nil && errors.Is(runErr, ErrSuspended) && res != nil && wait:
		out := ToolOutput{waiting: &childWait{id: child.ID(), calls: res.Pending}}
		out.Child = childRef(child)
		return out
	case runErr != nil:
		return subagentFailed(child, "the sub-agent's turn failed: %v", runErr)
	case res.Reason != session.ReasonCompleted:
		return subagentFailed(child, "the sub-agent's turn ended with reason %s", res.Reason)
	case closeErr != nil:
		return subagentFailed(child, "closing the sub-agent's session: %v", closeErr)
	}
	return ToolOutput{Content: res.Content, Child: childRef(child)}
}

// childRef names the child's log as it stands, bound by the root of its
// tree: the parent's tool/result then pins every record of the child up
// to the seq it names.
func childRef(child *live.Session) *session.ChildRef {
	recs := child.Records()
	return &session.ChildRef{ID: child.ID(), Seq: int64(len(recs) - 1), Root: session.RootOf(recs)}
}

func subagentFailed(child *live.Session, format string, args ...any) ToolOutput {
	out := ToolOutput{Error: &session.ToolResultError{Code: CodeSubagentFailed, Message: fmt.Sprintf(format, args...)}}
	if child != nil {
		out.Child = childRef(child)
	}
	return out
}

// findChild opens the child session that answers inv's call, nil when
// there is none. The store's headers are the only link a new process has.
func findChild(ctx context.Context, mgr *live.Manager, inv *ToolInvocation) (*live.Session, error) {
	infos, err := mgr.Store().List(ctx)
	var le *session.ListError
	if err != nil && !errors.As(err, &le) {
		return nil, err
	}
	want := session.Parent{ID: inv.Session, Seq: inv.CallSeq, Call: inv.Call.ID}
	for _, in := range infos {
		if in.Parent != nil && *in.Parent == want {
			return mgr.Open(ctx, in.ID)
		}
	}
	return nil, nil
}

// endedTurn is the result of sess's last turn as its log tells it.
func endedTurn(sess *live.Session) *TurnResult {
	res := &TurnResult{Session: sess.ID(), Reason: ReasonSuspended}
	done := false
	for r := range sess.Backward() {
		switch r.Type() {
		case session.TypeTurnEnd:
			if e, err := session.DecodeData[session.TurnEnd](r); err == nil && !done {
				res.Reason, res.Turn, done = e.Reason, r.Turn(), true
			}
		case session.TypeAssistantMessage:
			if m, err := session.DecodeData[session.AssistantMessage](r); err == nil && done {
				res.Content = m.Content
				return res
			}
		case session.TypeTurnStart:
			if done {
				return res
			}
		}
	}
	return res
}

// childWait is a sub-agent's session waiting for decisions.
type childWait struct {
	id    string
	calls []session.PendingCall
}

// DeferredStarter is implemented by tools whose tool/start is logged once
// they returned rather than before they run: a sub-agent's, whose run may
// wait for an approval, which only a call not started may; and a replay's
// stand-in for one, so that it logs its calls as the sub-agent did.
type DeferredStarter interface {
	DeferredStart() bool
}

// DeferredStart implements [DeferredStarter].
func (d *delegate) DeferredStart() bool { return true }

func deferredStart(t Tool) bool {
	d, ok := t.(DeferredStarter)
	return ok && d.DeferredStart()
}

// await logs the approval/request of call c (logged at callSeq), whose
// sub-agent waits as w says, and returns it as a pending call.
func (t *turn) await(n int, c session.ToolCall, callSeq int64, w *childWait) (session.PendingCall, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "its session %s waits for a decision on", w.id)
	for i, p := range w.calls {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, " %s (%s %s", p.Call.ID, session.Excerpt(p.Call.Name, maxEcho), session.Excerpt(p.Call.Arguments, maxEcho))
		if p.Request.Reason != "" {
			fmt.Fprintf(&b, ": %s", p.Request.Reason)
		}
		b.WriteByte(')')
	}
	req := session.ApprovalRequest{ID: c.ID, By: "sub-agent " + c.Name, Reason: b.String()}
	rq, err := t.append(session.Event{Type: session.TypeApprovalRequest, Step: n, Data: req})
	if err != nil {
		return session.PendingCall{}, err
	}
	return session.PendingCall{Call: c, CallSeq: callSeq, Request: req, RequestSeq: rq.Seq()}, nil
}

var (
	_ Tool            = (*delegate)(nil)
	_ ConcurrencySafe = (*delegate)(nil)
)

// provideAgent provides a as the plugin's services: under its entry id in
// [AgentServices]; as [AgentService] when it is the composition's entry
// point (offered to no other agent, and the only such one); and, with
// as_tool, its delegation tool.
func provideAgent(c *bus.Context, a *Agent) error {
	cfg := &a.cfg
	if cfg.entry != "" {
		if _, err := AgentServices.Key(cfg.entry).Provide(c, a); err != nil {
			return err
		}
	}
	if cfg.AsTool != nil {
		d, err := newDelegate(a, cfg.AsTool)
		if err != nil {
			return err
		}
		if _, err := ProvideTool(c, d); err != nil {
			return err
		}
		return nil
	}
	if cfg.notMain {
		return nil
	}
	_, err := AgentService.Provide(c, a)
	return err
}
