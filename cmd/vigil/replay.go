package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

func newReplayCmd(e *env) *cobra.Command {
	var cfg string
	var asJSON, tree bool
	cmd := &cobra.Command{
		Use:   "replay ID|FILE",
		Short: "Re-derive every request of a session and compare",
		Long: `Re-run a stored session (an id in the store of the composition -c names, or
a log file) through provider/replay, with the invariants plugin strict and
the recorded tool results, and report whether every request re-derives
identically: the digest each replayed step sends must equal the one the
original step recorded. Exit 1 when one differs. --json prints
{session, steps, identical}. --tree ID replays the session and every
sub-agent session under it (vigil sessions tree), one after another, each
report under a "session ID" line (with --json, one object per session).`,
		Example: `  vigil replay 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  vigil replay session.jsonl --json`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return fmt.Errorf("replay takes one session id or log file")
			}
			return nil
		},
		ValidArgsFunction: completeSessionIDs(e, true),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if tree {
				return cmdReplayTree(cmd.Context(), e, cfg, asJSON, args[0])
			}
			return cmdReplay(cmd.Context(), e, cfg, asJSON, args[0])
		}),
	}
	configFlag(cmd, &cfg)
	cmd.Flags().BoolVar(&tree, "tree", false, "replay the session and every sub-agent session under it")
	jsonFlag(cmd, &asJSON, "the step-by-step comparison")
	return cmd
}

// cmdReplay re-runs a stored session through provider/replay, with the
// invariants plugin strict and the recorded tool results, and reports
// whether every request re-derives identically: the digest each replayed
// step sends must equal the digest the original step recorded.
func cmdReplay(ctx context.Context, e *env, cfg string, asJSON bool, arg string) error {
	orig, err := loadLog(ctx, e, cfg, arg)
	if err != nil {
		return err
	}
	steps, err := replayLog(ctx, e, orig)
	if err != nil {
		return err
	}
	same := 0
	for _, s := range steps {
		if s.Same {
			same++
		}
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"session": orig.Info.ID, "steps": steps, "identical": same == len(steps)}); err != nil {
			return err
		}
	} else {
		for _, s := range steps {
			mark := "✓"
			if !s.Same {
				mark = "✗"
			}
			fmt.Fprintf(e.stdout, "%s turn %d step %d  %s\n", mark, s.Turn, s.Step, s.Note)
		}
		fmt.Fprintf(e.stdout, "%d of %d requests re-derived identically\n", same, len(steps))
	}
	if same != len(steps) {
		return silentError{exitFailed}
	}
	return nil
}

// loadLog reads a log file, or the log of a session id from the store of
// the composition in cfg.
func loadLog(ctx context.Context, e *env, cfg, arg string) (*session.Log, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		f, err := os.Open(arg)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		return session.Decode(f)
	}
	if !session.ValidID(arg) {
		return nil, notFoundf("%s: no such file or session id", arg)
	}
	h, err := openHost(e, cfg)
	if err != nil {
		return nil, err
	}
	defer h.close()
	mgr, err := service(h, live.Sessions)
	if err != nil {
		return nil, err
	}
	return mgr.Store().Load(ctx, arg)
}

// replayLog runs every turn of orig again (see replay.Run) on a fresh
// in-memory runtime with the invariants plugin strict. Turns that failed
// in the recording fail again; only a refusal by the invariants plugin
// counts as a divergence, reported as a last step.
func replayLog(ctx context.Context, e *env, orig *session.Log) ([]replayedStep, error) {
	root := bus.New(bus.WithLogger(newLogger(e)))
	defer root.Dispose()
	c := root.Context()
	if _, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict}); err != nil {
		return nil, err
	}
	rr, err := replay.Run(ctx, c, live.NewManager(c, memory.New()), orig.Records)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", orig.Info.ID, err)
	}
	steps := make([]replayedStep, 0, len(rr.Steps)+1)
	for _, s := range rr.Steps {
		st := replayedStep{StepComparison: s}
		switch {
		case s.Replayed == "":
			st.Note = "not replayed"
		case s.Recorded == "":
			st.Note = "a request the original did not send"
		case s.Same:
			st.Note = "request " + short(s.Recorded)
		default:
			st.Note = fmt.Sprintf("request differs: recorded %s, replayed %s", short(s.Recorded), short(s.Replayed))
		}
		steps = append(steps, st)
	}
	for _, err := range rr.Errors {
		var ie *invariants.InvariantError
		if errors.As(err, &ie) {
			steps = append(steps, replayedStep{Note: "refused by the invariants plugin: " + ie.Error()})
			break
		}
	}
	return steps, nil
}

// replayedStep is one line of the report.
type replayedStep struct {
	replay.StepComparison
	Note string `json:"note"`
}
