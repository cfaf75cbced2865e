package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// runOptions are the flags of `vigil run`.
type runOptions struct {
	cfg, sid     string
	asJSON, wait bool
}

func newRunCmd(e *env) *cobra.Command {
	var o runOptions
	cmd := &cobra.Command{
		Use:   "run [PROMPT...]",
		Short: "Run one turn of an agent",
		Long: `Run one turn: the prompt is the arguments joined by spaces, or stdin when
there are none. The answer streams to stdout; the session id and its log's
path, tool calls and waits go to stderr. -s continues a session instead of
starting one; flags may come after the prompt.

A turn holds its session's lease: a second run on a session another process
is running a turn on is refused (exit 1, naming the holder) unless --wait.`,
		Example: `  vigil run "What is in this folder?"
  vigil run "And now?" -s 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  echo "Summarize README.md" | vigil run --json
  vigil run -c agents/dev.yaml "hello"`,
		Args: cobra.ArbitraryArgs,
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return cmdRun(cmd.Context(), e, o, args)
		}),
	}
	configFlag(cmd, &o.cfg)
	sessionFlag(e, cmd, &o.sid, "continue this session instead of starting one")
	cmd.Flags().BoolVar(&o.asJSON, "json", false, "print the turn's result as JSON instead of streaming the answer")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait for a turn another process runs on the session")
	return cmd
}

// cmdRun runs one turn: the prompt from the arguments or stdin, the answer
// streamed to stdout, the session id and log path to stderr.
func cmdRun(ctx context.Context, e *env, o runOptions, args []string) error {
	prompt := strings.Join(args, " ")
	if prompt == "" {
		if isTerminal(e.stdin) {
			fmt.Fprintln(e.stderr, "reading the prompt from stdin (end it with Ctrl-D; or give it as arguments: vigil run \"…\")")
		}
		b, err := io.ReadAll(e.stdin)
		if err != nil {
			return fmt.Errorf("read prompt: %w", err)
		}
		prompt = strings.TrimSpace(string(b))
	}
	if prompt == "" {
		return usagef("run needs a prompt (as arguments or on stdin)")
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
	sess, done, err := rt.session(ctx, e, o.sid, o.wait)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stderr, "session %s%s\n", sess.ID(), rt.logPath(sess.ID()))
	res, err := rt.turn(ctx, e, sess, prompt, !o.asJSON)
	if derr := done(context.WithoutCancel(ctx)); derr != nil && err == nil {
		err = derr
	}
	if o.asJSON && res != nil {
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
		fmt.Fprintf(e.stderr, "waiting for session %s: %v\n", id, err)
		s, done, err = live.OpenLeased(ctx, rt.mgr, id, true)
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

// turn runs one turn, streaming text to stdout when stream is set and
// showing tool activity and waits on stderr.
func (rt *runtime) turn(ctx context.Context, e *env, sess *live.Session, prompt string, stream bool) (*agentloop.TurnResult, error) {
	sp := newSpinner(e)
	defer sp.stop()
	wrote, midLine := false, false
	opts := []agentloop.RunOption{agentloop.OnChunk(func(c agentloop.Chunk) {
		sp.pause()
		if stream && c.Text != "" {
			fmt.Fprint(e.stdout, c.Text)
			wrote, midLine = true, true
		}
		if tc := c.ToolCall; tc != nil && tc.Name != "" {
			if stream && midLine {
				fmt.Fprintln(e.stdout)
				midLine = false
			}
			fmt.Fprintf(e.stderr, "→ %s\n", tc.Name)
		}
	})}
	res, err := rt.agent.Run(ctx, sess, prompt, opts...)
	sp.stop()
	if stream && wrote && midLine {
		fmt.Fprintln(e.stdout)
	}
	return res, err
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
