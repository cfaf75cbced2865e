package agentloop

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// TurnResult describes a finished turn.
type TurnResult struct {
	Session string
	// Turn is the turn's number in the session.
	Turn int
	// Reason is the turn/end reason: completed, max-steps, aborted, error,
	// blocked, budget (then the error is a [*BudgetError]).
	Reason string
	// Steps counts the steps the turn ran.
	Steps int
	// Content is the content of the turn's last assistant message.
	Content string
	// Usage sums the usage the provider reported over the turn's steps.
	Usage session.Usage
	// Pending are the calls a suspended turn (Reason "suspended") waits
	// for, in the order of their approval requests.
	Pending []session.PendingCall
	// Checkpoint is the signed checkpoint note the turn ended (or
	// suspended) with: its receipt, to keep apart from the log (see
	// vigil verify --anchor). Empty when the sessions are not signed.
	Checkpoint string
}

// RunOption configures one [Agent.Run].
type RunOption func(*runOptions)

type runOptions struct {
	onChunk func(Chunk)
	by      string
}

// By makes Run (or Continue) log name on its turn/start as who asked for
// the turn (the principal that posted it to the API). A resumption logs
// no turn/start, so there it changes nothing.
func By(name string) RunOption {
	return func(o *runOptions) { o.by = name }
}

// OnChunk makes Run call fn with every content chunk of the turn, in
// order, after the chunk was logged. fn runs on the turn's goroutine and
// should return quickly.
func OnChunk(fn func(Chunk)) RunOption {
	return func(o *runOptions) { o.onChunk = fn }
}

// Run runs one turn on sess: prompt as the user message (none when
// empty), then steps until the model stops asking for tools or the step
// limit is reached. See the package documentation for the events it logs.
//
// The returned result is nil only when the turn never started (the agent
// is closed or busy with sess, the session has an open turn, a listener
// refused). A turn that ended aborted or with an error returns its result
// and the cause: ctx's error for aborted, the provider's or listener's
// error otherwise. A turn that completed or hit the step limit returns a
// nil error. A turn whose step waits for approvals (see [ToolApprove])
// is left open, its log flushed: Run returns its result, with Reason
// "suspended" and the Pending calls, and a [*SuspendedError] matching
// [ErrSuspended]; a new Run on that session is refused with such an error
// until the calls are decided ([Decide]) and the turn resumed
// ([Agent.Resume]).
func (a *Agent) Run(ctx context.Context, sess *live.Session, prompt string, opts ...RunOption) (*TurnResult, error) {
	return a.withTurn(ctx, sess, opts, func(ctx context.Context, t *turn) (*TurnResult, error) {
		return t.run(ctx, prompt)
	})
}

// withTurn runs body on a turn of sess claimed for this agent.
func (a *Agent) withTurn(ctx context.Context, sess *live.Session, opts []RunOption, body func(context.Context, *turn) (*TurnResult, error)) (*TurnResult, error) {
	var ro runOptions
	for _, o := range opts {
		o(&ro)
	}
	if err := a.begin(ctx); err != nil {
		return nil, err
	}
	defer a.end(ctx)
	ctx, cancel := context.WithCancel(withLedger(ctx, sess.Ledger()))
	defer cancel()
	key, st, err := a.claim(sess, cancel)
	if err != nil {
		return nil, err
	}
	t := &turn{a: a, sess: sess, actx: context.WithoutCancel(ctx), headed: st.headed, dig: &st.dig, view: &st.view, ids: &st.ids, onChunk: ro.onChunk, by: ro.by}
	defer func() { a.release(st, key, t.headed) }()
	a.statusMu.Lock()
	closed := a.closed
	a.statusMu.Unlock()
	if closed {
		cancel()
	}
	return body(ctx, t)
}

// turn is the state of one turn in progress.
type turn struct {
	a    *Agent
	sess *live.Session
	// actx is the turn's context without its cancellation: the events
	// that record an abort must still be appended after ctx is done.
	actx    context.Context
	n       int
	headed  bool
	dig     *digester
	view    *reqView
	ids     *callIDs
	onChunk func(Chunk)
	by      string
	res     TurnResult
}

func (t *turn) append(ev session.Event) (session.Record, error) {
	ev.Turn = t.n
	rec, err := t.sess.Append(t.actx, ev)
	if err != nil {
		if be := vetoed(ev.Type, err); be != nil {
			return session.Record{}, be
		}
		return session.Record{}, fmt.Errorf("agentloop: append %s: %w", ev.Type, err)
	}
	return rec, nil
}

// durable makes every record appended so far durable. A tool runs only
// once its tool/start (or a retry's tool/retry) is, and so is every
// denial of its step, logged before it: a crash after the tool's effect
// never leaves a log that says the call did not start, or that forgot a
// denial.
func (t *turn) durable() error {
	if err := t.sess.Flush(t.actx); err != nil {
		return fmt.Errorf("agentloop: make the log durable before a tool runs: %w", err)
	}
	return nil
}

// lastTurn returns the number of the session's last turn and whether it
// is still open.
func lastTurn(sess *live.Session) (int, bool) {
	for r := range sess.Backward() {
		switch r.Type() {
		case session.TypeTurnEnd:
			return r.Turn(), false
		case session.TypeTurnStart:
			return r.Turn(), true
		}
	}
	return 0, false
}

// refuseOpenTurn refuses a new turn on a session whose last turn is open:
// left open by another writer, or suspended on approvals, it is not ours
// to continue, nor to compact under.
func refuseOpenTurn(sess *live.Session) error {
	last, open := lastTurn(sess)
	if !open {
		return nil
	}
	if err := refuseSuspended(sess); err != nil {
		return err
	}
	return fmt.Errorf("agentloop: turn %d of session %s: %w", last, sess.ID(), session.ErrOpenTurn)
}

func (t *turn) run(ctx context.Context, prompt string) (*TurnResult, error) {
	if _, err := t.start(ctx, nil); err != nil {
		return nil, err
	}
	if prompt != "" {
		if _, err := t.append(session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: prompt}}); err != nil {
			return t.finish(failReason(err), err)
		}
	}
	return t.steps(ctx, 1)
}

// start opens the turn, for Run and Continue alike: it resolves the
// provider and tools, refuses an agent whose output schema did not
// compile and a session with an open turn, emits agent/prepare and logs
// turn/start. admit, when not nil, is the continuation's own refusal; it
// runs before agent/prepare (nothing of a refused turn, not even a
// compaction, reaches the log) and again after it, as the open-turn
// check does, since a listener may have appended. A continuation's
// turn/start names the turn it continues. It returns the turn's tools.
func (t *turn) start(ctx context.Context, admit func(*live.Session) error) ([]Tool, error) {
	a := t.a
	prov, tools, err := a.resolve()
	if err != nil {
		return nil, err
	}
	if a.schemaErr != nil {
		return nil, fmt.Errorf("agentloop: %w", a.schemaErr)
	}
	if err := refuseOpenTurn(t.sess); err != nil {
		return nil, err
	}
	if admit != nil {
		if err := admit(t.sess); err != nil {
			return nil, err
		}
	}
	if err := TurnPrepare.Emit(ctx, a.c, &Prepare{Agent: a.id, Session: t.sess, Provider: prov, Header: a.header(prov, tools)}); err != nil {
		return nil, fmt.Errorf("agentloop: agent/prepare: %w", err)
	}
	last, open := lastTurn(t.sess)
	if open {
		return nil, fmt.Errorf("agentloop: turn %d of session %s: %w", last, t.sess.ID(), session.ErrOpenTurn)
	}
	start := session.TurnStart{By: t.by}
	if admit != nil {
		if err := admit(t.sess); err != nil {
			return nil, err
		}
		start.Continues = last
	}
	t.n = last + 1
	t.res = TurnResult{Session: t.sess.ID(), Turn: t.n}
	if _, err := t.append(session.Event{Type: session.TypeTurnStart, Data: start}); err != nil {
		return nil, err
	}
	return tools, nil
}

// steps runs the turn's steps from first on and ends the turn.
func (t *turn) steps(ctx context.Context, first int) (*TurnResult, error) {
	a := t.a
	for step := first; ; step++ {
		out, err := t.step(ctx, step)
		if !out.notStarted {
			t.res.Steps = step
		}
		if err != nil {
			return t.finish(failReason(err), err)
		}
		switch {
		case out.suspended:
			return t.suspend()
		case out.reason != "":
			return t.finish(out.reason, out.err)
		case !out.toolCalls:
			retry, cause, err := t.checkOutput(step, out.content)
			switch {
			case err != nil:
				return t.finish(failReason(err), err)
			case cause != nil:
				return t.finish(session.ReasonError, cause)
			case retry:
				continue
			}
			return t.finish(session.ReasonCompleted, nil)
		case step >= a.cfg.MaxSteps:
			return t.finish(session.ReasonMaxSteps, nil)
		}
	}
}

// finish logs turn/end and returns the result with cause. A step left
// open by a failed append (a vetoed tool/call, say) is closed first, the
// way crash repair closes one: its unanswered calls get error results
// that say why they did not run (cause, not a crash), and the step ends
// with finish "error", so the log stays well nested.
func (t *turn) finish(reason string, cause error) (*TurnResult, error) {
	t.res.Reason = reason
	// Only a turn cut short can have left a step open.
	if reason != session.ReasonCompleted && reason != session.ReasonMaxSteps {
		if closers := session.CloseTail(t.sess.Records()); len(closers) > 1 {
			for _, ev := range closers[:len(closers)-1] {
				if res, ok := ev.Data.(session.ToolResult); ok && res.Error != nil && cause != nil {
					e := *res.Error
					e.Message = "the tool did not run: " + cause.Error()
					if e.Code == session.CodeToolOutcomeUnknown {
						e.Message = "the tool ran but the turn ended before its result was logged; its outcome is unknown: " + cause.Error()
					}
					res.Error = &e
					ev.Data = res
				}
				if _, err := t.sess.Append(t.actx, ev); err != nil {
					return &t.res, errors.Join(cause, fmt.Errorf("agentloop: close step: %w", err))
				}
			}
		}
	}
	end := session.TurnEnd{Reason: reason}
	if cause != nil {
		end.Error = cause.Error()
	}
	if _, err := t.append(session.Event{Type: session.TypeTurnEnd, Data: end}); err != nil {
		return &t.res, errors.Join(cause, err)
	}
	if err := t.receipt(); err != nil {
		return &t.res, errors.Join(cause, err)
	}
	return &t.res, cause
}

// resolve reads the provider and the tools as they are now.
func (a *Agent) resolve() (Provider, []Tool, error) {
	prov, err := a.provider()
	if err != nil {
		return nil, nil, fmt.Errorf("agentloop: provider: %w", err)
	}
	tools, err := a.tools()
	if err != nil {
		return nil, nil, fmt.Errorf("agentloop: tools: %w", err)
	}
	return prov, tools, nil
}

// header is the request header the agent wants for prov and tools.
func (a *Agent) header(prov Provider, tools []Tool) session.Header {
	h := session.Header{
		Model:       a.cfg.Model,
		System:      a.cfg.System,
		Temperature: a.cfg.Temperature,
		MaxTokens:   a.cfg.MaxTokens,
		Stop:        a.cfg.Stop,
	}
	if a.schema != nil {
		h.OutputSchema = a.schema.text
	}
	fillHeader(&h, prov)
	if len(tools) > 0 {
		h.Tools = make([]session.ToolSpec, len(tools))
		for i, tl := range tools {
			h.Tools[i] = tl.Spec()
		}
	}
	return h
}

// receipt signs the log as the turn leaves it (the session signed at
// its turn/end already, and a suspension is signed here) and keeps the
// checkpoint as the turn's receipt.
func (t *turn) receipt() error {
	msg, err := t.sess.Checkpoint(t.actx)
	if err != nil {
		return fmt.Errorf("agentloop: checkpoint: %w", err)
	}
	t.res.Checkpoint = string(msg)
	return nil
}
