package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// runOptions are the flags of `vigil run`.
type runOptions struct {
	cfg, sid     string
	agent        string
	asJSON, wait bool
	// cont continues the session's interrupted last turn (no prompt).
	cont bool
}

func newRunCmd(e *env) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [PROMPT...]",
		Short: "Run one turn of an agent",
		Long: `Run one turn: the prompt is the arguments joined by spaces, or stdin when
there are none. The answer streams to stdout; the session id and its log's
path, tool calls and waits go to stderr. -s continues a session instead of
starting one; flags may come after the prompt. --continue (with -s and no
prompt) carries on the session's last turn when it was interrupted (its
process died mid-turn), stopped (Ctrl-C: vigil run exits 130) or a budget
ended it: the model is asked again from the log, which shows the
interrupted tool calls' results.

With several agents in the composition, --agent names the entry (its id) that
runs the turn; without it, the only agent not offered to another as a tool.

A turn holds its session's lease: a second run on a session another process
is running a turn on is refused (exit 1, naming the holder) unless --wait.`,
		Example: `  vigil run "What is in this folder?"
  vigil run "And now?" -s 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  vigil run -s 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A --continue
  echo "Summarize README.md" | vigil run --json
  vigil run -c agents/dev.yaml "hello"
  vigil run --agent planner "Plan the launch"`,
		Args: cobra.ArbitraryArgs,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return cmdRun(cmd.Context(), e, o, args)
		}),
	}
	configFlag(cmd, &o.cfg)
	sessionFlag(e, cmd, &o.sid, "continue this session instead of starting one")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the turn's result as JSON instead of streaming the answer")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait for a turn another process runs on the session")
	cmd.Flags().StringVar(&o.agent, "agent", "", "the id of the agent entry that runs the turn (default: the entry point)")
	cmd.Flags().BoolVar(&o.cont, "continue", false, "continue the session's interrupted, stopped or budget-ended last turn (with -s, no prompt)")
	return cmd
}

// cmdRun runs one turn: the prompt from the arguments or stdin, the answer
// streamed to stdout, the session id and log path to stderr.
func cmdRun(ctx context.Context, e *env, o runOptions, args []string) error {
	prompt, err := runPrompt(e, o, args)
	if err != nil {
		return err
	}
	h, err := openHost(e, o.cfg)
	if err != nil {
		return err
	}
	defer h.close()
	rt, err := h.runtime()
	if err != nil {
		return err
	}
	agent, err := h.rt.AgentNamed(o.agent)
	if err != nil {
		return usageError{err}
	}
	// An answer an output schema may refuse is not streamed: stdout gets
	// the accepted answer only, once the turn has it (a refused one is
	// shown on stderr, with the retry).
	structured := len(agent.Config().OutputSchema) > 0
	t := vigil.TurnOptions{Session: o.sid, Prompt: prompt, Continue: o.cont, Agent: o.agent}
	res, err := rt.turnWith(ctx, e, t, o.wait, !o.asJSON && !structured, func(id string) {
		fmt.Fprintf(e.stderr, "session %s%s\n", id, rt.logPath(id))
	})
	if structured && !o.asJSON && err == nil && res != nil && res.Reason == session.ReasonCompleted {
		h.status.text(res.Content + "\n")
	}
	return reportTurn(ctx, e, h, o, res, err)
}

// runPrompt is the prompt of vigil run: its arguments, else stdin; none
// for --continue, which needs -s.
func runPrompt(e *env, o runOptions, args []string) (string, error) {
	prompt := strings.Join(args, " ")
	switch {
	case o.cont && o.sid == "":
		return "", usagef("--continue needs the session to continue (-s ID)")
	case o.cont && prompt != "":
		return "", usagef("--continue takes no prompt: the turn carries on from the log")
	case o.cont || prompt != "":
		return prompt, nil
	}
	if isTerminal(e.stdin) {
		fmt.Fprintln(e.stderr, "reading the prompt from stdin (end it with Ctrl-D; or give it as arguments: vigil run \"…\")")
	}
	b, err := io.ReadAll(e.stdin)
	if err != nil {
		return "", fmt.Errorf("read prompt: %w", err)
	}
	if prompt = strings.TrimSpace(string(b)); prompt == "" {
		return "", usagef("run needs a prompt (as arguments or on stdin)")
	}
	return prompt, nil
}

// reportTurn ends vigil run: the result as JSON with --json, what waits
// for a decision and how to give it, how to carry on a stopped turn, and
// the exit the turn's end calls for.
func reportTurn(ctx context.Context, e *env, h *host, o runOptions, res *agentloop.TurnResult, err error) error {
	if o.asJSON && res != nil {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(turnJSON(res, err)); jerr != nil {
			return jerr
		}
	}
	if s := suspensionOf(res); s != nil && errors.Is(err, vigil.ErrSuspended) {
		// What waits, and how to decide, instead of the error's list.
		if !o.asJSON {
			printPending(e.stderr, res.Session, s, storeChildWaits(ctx, h.rt))
		}
		return suspendedError{err}
	}
	if interrupted(err) && res != nil && !o.asJSON {
		fmt.Fprintf(e.stderr, "stopped; vigil run -s %s --continue carries the turn on\n", res.Session)
	}
	return turnError(res, err)
}

// runtime is what a turn needs from a running composition.
type runtime struct {
	h   *host
	mgr *live.Manager
}

func (h *host) runtime() (*runtime, error) {
	mgr, err := service(h, live.Sessions)
	if err != nil {
		return nil, err
	}
	// A composition without an agent is a configuration error (exit 2),
	// found before any session is opened; turns ask the runtime for it.
	// Several agents without one entry point: --agent names one.
	if _, err := service(h, agentloop.AgentService); err != nil {
		if named, lerr := agentloop.AgentServices.Lookup(h.rt.Context()); lerr != nil || len(named) == 0 {
			return nil, err
		}
	}
	return &runtime{h: h, mgr: mgr}, nil
}

// session opens id for one turn, or creates a session when id is empty.
// On a store with leases (store/postgres's lease, store/jsonl's file
// lock) it holds the session's lease until done is called, so one turn
// at a time runs per session across processes; with wait it waits for a
// turn running elsewhere to end, saying so on stderr, with the holder.
func (rt *runtime) session(ctx context.Context, e *env, id string, wait bool) (*live.Session, func(context.Context) error, error) {
	s, done, err := live.OpenLeased(ctx, rt.mgr, id, false)
	if wait && errors.Is(err, session.ErrLocked) {
		end := waitLease(e, rt.h.status, id, err)
		s, done, err = live.OpenLeased(ctx, rt.mgr, id, true)
		end()
	}
	switch {
	case errors.Is(err, session.ErrNotFound):
		return nil, nil, notFoundf("no session %q in this store", id)
	case errors.Is(err, session.ErrLocked):
		return nil, nil, fmt.Errorf("%w; --wait waits for it", err)
	}
	return s, done, err
}

// logPath names where the session's log is stored, for stores with files.
func (rt *runtime) logPath(id string) string {
	if p, ok := rt.mgr.Store().(interface{ Path(string) string }); ok {
		return "  log " + p.Path(id)
	}
	return ""
}

// turnOn runs a turn with prompt on session id ("" for a new one): see
// turnWith.
func (rt *runtime) turnOn(ctx context.Context, e *env, id, prompt string, wait, stream bool, onStart func(id string)) (*agentloop.TurnResult, error) {
	return rt.turnWith(ctx, e, vigil.TurnOptions{Session: id, Prompt: prompt}, wait, stream, onStart)
}

// turnWith runs turn t on session t.Session ("" for a new one) through the vigil
// runtime, under the session's lease: with wait it waits for a turn
// running elsewhere to end, saying so on stderr with the holder. It
// streams text to stdout when stream is set and shows tool activity and
// waits on stderr (see turnView); onStart gets the session's id once it
// is open.
func (rt *runtime) turnWith(ctx context.Context, e *env, t vigil.TurnOptions, wait, stream bool, onStart func(id string)) (*agentloop.TurnResult, error) {
	id := t.Session
	v := watchTurn(rt.h.rt.Context(), rt.h.status, id, stream)
	defer v.close()
	t.OnChunk = v.chunk
	t.OnStart = func(id string) {
		v.follow(id)
		if onStart != nil {
			onStart(id)
		}
	}
	res, err := rt.h.rt.Turn(ctx, t)
	if wait && errors.Is(err, vigil.ErrBusy) {
		end := waitLease(e, rt.h.status, id, err)
		t.Wait = true
		res, err = rt.h.rt.Turn(ctx, t)
		end()
	}
	return res, sessionError(id, res, err)
}

// sessionError names the session in the refusals of a command on it.
func sessionError(id string, res *agentloop.TurnResult, err error) error {
	switch {
	case errors.Is(err, vigil.ErrNotFound) && res == nil:
		return notFoundf("no session %q in this store", id)
	case errors.Is(err, vigil.ErrBusy) && res == nil:
		return fmt.Errorf("%w; --wait waits for it", err)
	}
	return err
}

// suspendedError is the outcome of a turn that waits for a decision
// (exit 3), reported as one line: the calls are listed above it.
type suspendedError struct{ err error }

func (e suspendedError) Error() string { return "the turn is suspended, waiting for a decision" }
func (e suspendedError) Unwrap() error { return e.err }

// suspensionOf is the suspension a suspended turn's result names.
func suspensionOf(res *agentloop.TurnResult) *session.Suspension {
	if res == nil || len(res.Pending) == 0 {
		return nil
	}
	return &session.Suspension{Turn: res.Turn, Step: res.Steps, Calls: res.Pending}
}

// turnError maps a turn's outcome to the command's error: nil when the
// turn completed (or hit the step limit), else the cause (exit 1).
func turnError(res *agentloop.TurnResult, err error) error {
	var ie *invariants.InvariantError
	if errors.As(err, &ie) {
		return fmt.Errorf("refused by the invariants plugin: %w", err)
	}
	if err != nil {
		return err
	}
	if res != nil && res.Reason != session.ReasonCompleted && res.Reason != session.ReasonMaxSteps {
		return fmt.Errorf("turn ended: %s", res.Reason)
	}
	return nil
}

func turnJSON(res *agentloop.TurnResult, err error) map[string]any {
	out := map[string]any{
		"session": res.Session, "turn": res.Turn, "reason": res.Reason, "steps": res.Steps,
		"content": res.Content, "usage": map[string]int{"input": res.Usage.Input, "output": res.Usage.Output},
	}
	if err != nil {
		out["error"] = err.Error()
	}
	if res.Checkpoint != "" {
		out["checkpoint"] = res.Checkpoint
	}
	if len(res.Pending) > 0 {
		pending := make([]map[string]any, 0, len(res.Pending))
		for _, p := range res.Pending {
			pending = append(pending, map[string]any{"call": p.Call.ID, "tool": p.Call.Name, "arguments": p.Call.Arguments, "by": p.Request.By, "reason": p.Request.Reason})
		}
		out["pending"] = pending
	}
	return out
}
