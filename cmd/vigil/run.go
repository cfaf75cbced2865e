package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// cmdRun runs one turn: the prompt from the arguments or stdin, the answer
// streamed to stdout, the session id and log path to stderr.
func cmdRun(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	cfg := fs.String("c", "plugins.yaml", "plugins.yaml")
	sid := fs.String("s", "", "continue this session instead of starting one")
	asJSON := fs.Bool("json", false, "print the turn's result as JSON instead of streaming the answer")
	wait := fs.Bool("wait", false, "wait for a turn another process runs on the session")
	fs.BoolVar(&e.quiet, "quiet", false, "show no progress on stderr")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	prompt := strings.Join(fs.Args(), " ")
	if prompt == "" {
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return fmt.Errorf("read prompt: %w", err)
		}
		prompt = strings.TrimSpace(string(b))
	}
	if prompt == "" {
		return usagef("run needs a prompt (as arguments or on stdin)")
	}
	h, err := openHost(e, *cfg)
	if err != nil {
		return err
	}
	defer h.close()
	rt, err := h.runtime()
	if err != nil {
		return err
	}
	sess, done, err := rt.session(ctx, e, *sid, *wait)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "session %s%s\n", sess.ID(), rt.logPath(sess.ID()))
	res, err := rt.turn(ctx, e, sess, prompt, !*asJSON)
	if derr := done(context.WithoutCancel(ctx)); derr != nil && err == nil {
		err = derr
	}
	if *asJSON && res != nil {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if jerr := enc.Encode(turnJSON(res, err)); jerr != nil {
			return jerr
		}
	}
	return turnError(res, err)
}

// runtime is what a turn needs from a running composition.
type runtime struct {
	h     *host
	mgr   *live.Manager
	agent *agentloop.Agent
}

func (h *host) runtime() (*runtime, error) {
	mgr, err := service(h, live.Sessions)
	if err != nil {
		return nil, err
	}
	agent, err := service(h, agentloop.AgentService)
	if err != nil {
		return nil, err
	}
	return &runtime{h: h, mgr: mgr, agent: agent}, nil
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
		return nil, nil, usagef("no session %q in this store", id)
	case errors.Is(err, session.ErrLocked):
		return nil, nil, fmt.Errorf("%w (use --wait to wait for it)", err)
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

// turn runs one turn, streaming text to stdout when stream is set and
// showing tool activity and waits on stderr (see turnView).
func (rt *runtime) turn(ctx context.Context, _ *env, sess *live.Session, prompt string, stream bool) (*agentloop.TurnResult, error) {
	v := watchTurn(rt.h.root.Context(), rt.h.status, sess.ID(), stream)
	defer v.close()
	return rt.agent.Run(ctx, sess, prompt, agentloop.OnChunk(v.chunk))
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
	return out
}
