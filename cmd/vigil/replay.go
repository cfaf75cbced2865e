package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	var cfg, against string
	var asJSON, liveRun, tree bool
	cmd := &cobra.Command{
		Use:   "replay [--against FILE [--live]] ID|FILE|DIR...",
		Short: "Re-derive every request of sessions and compare",
		Long: `Re-run stored sessions (ids in the store of the composition -c names, log
files, or every log of a store directory) through the real loop with the invariants plugin strict, and
report whether every request re-derives identically: each step runs with
the request header and tools the log had in force at that step, the model
answers with the recorded stream and each tool call with its recorded
result, approvals get their recorded decisions, compactions and other
events outside turns are copied, and a turn the recorded process died in
is closed as crash repair closed it. The digest each replayed step sends
must equal the one the original step recorded.

A log that fails vigil verify is refused, with verify's messages. A rerun
that stops following its recording (another event than recorded, or a
step the recording does not have) is reported, naming the turn and step.

Exit 0 when every request of every session matched, 1 otherwise, 4 when
an argument is neither a file nor a stored session. --json prints
{session, steps, identical, errors} per session (an array for several).

--against FILE re-runs the recorded user turns through the composition in
FILE instead (its system prompt, tools, compaction and plugins), feeding
the recorded model responses, tool results, summaries and decisions while
the requests still equal the recorded ones, and reports per session the
first request that differs: which header field (header.system,
header.tools, …) or message (messages[N]), with a diff of the recorded
value (-) and the one built now (+), or the first recorded request the
composition never sent, with why (a turn it refused, a lower step limit). An argument may be a store directory:
every log in it is replayed, with progress on stderr and a summary table
(--json: an array of {session, steps, identical, divergence, fork}).
--live sends the requests from the divergence on to the composition's own
provider, with its own tools, and writes the result as a fork of the
original in the -c store (the original is not touched). Exit 0 when every
request matched, 1 otherwise, 2 when FILE cannot be loaded.

--tree ID replays the session and every sub-agent session under it (vigil
sessions tree), each report under a "session ID" line.`,
		Example: `  vigil replay 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  vigil replay .vigil/sessions/*.jsonl --json
  vigil replay --against new.yaml .vigil/sessions
  vigil replay --against new.yaml --live 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("replay needs a session id or log file")
			}
			return nil
		},
		ValidArgsFunction: completeSessionIDs(e, true),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if tree {
				if len(args) != 1 || against != "" {
					return usageError{fmt.Errorf("--tree takes one session id, without --against")}
				}
				return cmdReplayTree(cmd.Context(), e, cfg, asJSON, args[0])
			}
			if against != "" {
				return cmdReplayAgainst(cmd.Context(), e, cfg, against, liveRun, asJSON, args)
			}
			if liveRun {
				return usageError{fmt.Errorf("--live needs --against")}
			}
			return cmdReplay(cmd.Context(), e, cfg, asJSON, args)
		}),
	}
	configFlag(cmd, &cfg)
	cmd.Flags().BoolVar(&tree, "tree", false, "replay the session and every sub-agent session under it")
	jsonFlag(cmd, &asJSON, "the step-by-step comparison")
	cmd.Flags().StringVar(&against, "against", "", "re-run the recorded user turns through the composition in this plugins.yaml")
	_ = cmd.MarkFlagFilename("against", "yaml", "yml")
	cmd.Flags().BoolVar(&liveRun, "live", false, "with --against: from the divergence on, ask the composition's provider and write a fork")
	return cmd
}

// replayReport is one session's result, as --json prints it.
type replayReport struct {
	Log       string         `json:"log"`
	Session   string         `json:"session,omitempty"`
	Steps     []replayedStep `json:"steps"`
	Identical bool           `json:"identical"`
	// Errors: why the log was refused, or why the rerun stopped
	// following its recording.
	Errors []string `json:"errors,omitempty"`
	// Findings are verify's findings on a refused log, each once.
	Findings []string `json:"findings,omitempty"`
}

// refusedForVerify is the error of a replay refused because its log
// fails verify: its findings are listed once, after it.
const refusedForVerify = "refused: the log fails verify"

// cmdReplay replays each argument's log (see replayLog) and reports.
func cmdReplay(ctx context.Context, e *env, cfg string, asJSON bool, args []string) error {
	var h *host
	defer func() {
		if h != nil {
			_ = h.close()
		}
	}()
	args, err := expandLogs(args)
	if err != nil {
		return err
	}
	failed, missing := false, false
	reports := make([]replayReport, 0, len(args))
	for _, arg := range args {
		rep, err := replayOne(ctx, e, cfg, &h, arg)
		if err != nil {
			var ce *configError
			if errors.As(err, &ce) {
				return err
			}
			if exitCode(ranError{err}) == exitNotFound {
				missing = true
			} else {
				failed = true
			}
			// Prefixed as report prefixes the others, as verify does.
			fmt.Fprintf(e.stderr, "vigil replay: %s: %s\n", arg, termSafe(err.Error()))
			reports = append(reports, replayReport{Log: arg, Steps: []replayedStep{}, Errors: []string{err.Error()}})
			continue
		}
		failed = failed || !rep.Identical
		reports = append(reports, *rep)
		if asJSON {
			continue
		}
		prefix := ""
		if len(args) > 1 {
			prefix = arg + ": "
		}
		for _, s := range rep.Steps {
			mark := "✓"
			if !s.Same {
				mark = "✗"
			}
			fmt.Fprintf(e.stdout, "%s%s turn %d step %d  %s\n", prefix, mark, s.Turn, s.Step, s.Note)
		}
		printReplayErrors(e.stdout, prefix, rep)
		same := 0
		for _, s := range rep.Steps {
			if s.Same {
				same++
			}
		}
		fmt.Fprintf(e.stdout, "%s%d of %d requests re-derived identically\n", prefix, same, len(rep.Steps))
	}
	if asJSON {
		var v any = reports
		if len(reports) == 1 {
			v = reports[0]
		}
		if err := printJSON(e.stdout, v); err != nil {
			return err
		}
	}
	switch {
	case failed:
		return silentError{exitFailed}
	case missing:
		return silentError{exitNotFound}
	}
	return nil
}

// printReplayErrors prints why a replay failed: each error on a line,
// and a refused log's verify findings once, under its refusal.
func printReplayErrors(w io.Writer, prefix string, rep *replayReport) {
	for _, msg := range rep.Errors {
		switch {
		case msg != refusedForVerify:
			fmt.Fprintf(w, "%s✗ %s\n", prefix, termSafe(msg))
		case len(rep.Findings) == 1:
			fmt.Fprintf(w, "%s✗ %s: %s\n", prefix, msg, termSafe(rep.Findings[0]))
		default:
			fmt.Fprintf(w, "%s✗ %s (%d findings):\n", prefix, msg, len(rep.Findings))
			for _, f := range rep.Findings {
				fmt.Fprintf(w, "%s    %s\n", prefix, termSafe(f))
			}
		}
	}
}

// replayOne verifies and replays the log of arg: a file, or a session id
// in the store of the composition (opened on first need).
func replayOne(ctx context.Context, e *env, cfg string, h **host, arg string) (*replayReport, error) {
	data, err := readLog(ctx, e, cfg, h, arg)
	if err != nil {
		return nil, err
	}
	vr, err := invariants.Verify(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	rep := &replayReport{Log: arg, Session: vr.Session, Steps: []replayedStep{}}
	if len(vr.Violations) > 0 {
		// Replay proves what a valid log's requests were; an invalid one
		// has nothing to prove.
		rep.Errors = []string{refusedForVerify}
		for _, v := range vr.Violations {
			rep.Findings = append(rep.Findings, v.String())
		}
		return rep, nil
	}
	log, err := session.Decode(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	rep.Session = log.Info.ID
	rep.Steps, rep.Errors, err = replayLog(ctx, e, log)
	if err != nil {
		return nil, err
	}
	rep.Identical = len(rep.Errors) == 0
	for _, s := range rep.Steps {
		rep.Identical = rep.Identical && s.Same
	}
	return rep, nil
}

// readLog returns the JSONL bytes of a log file, or of the log of a
// session id in the store of the composition in cfg (opened on first
// need): the one reading of a FILE|ID argument, for verify, replay,
// trace, prove and sessions show. An argument that is neither is "no such
// file or session id" (exit 4); the caller names the argument.
func readLog(ctx context.Context, e *env, cfg string, h **host, arg string) ([]byte, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		data, err := os.ReadFile(arg)
		if err != nil {
			// The path is the argument the caller names.
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return nil, pe.Err
			}
			return nil, err
		}
		return data, nil
	}
	if !session.ValidID(arg) {
		return nil, notFoundf("no such file or session id")
	}
	data, err := exportSession(ctx, e, cfg, h, arg)
	if errors.Is(err, session.ErrNotFound) {
		return nil, notFoundf("no such file or session id")
	}
	return data, err
}

// replayLog runs every turn of orig again (see replay.Run) on a fresh
// in-memory runtime with the invariants plugin strict. Turns that failed
// in the recording fail again; a refusal by the invariants plugin, or a
// rerun that stopped following the recording, is a divergence.
func replayLog(ctx context.Context, e *env, orig *session.Log) ([]replayedStep, []string, error) {
	root := bus.New(bus.WithLogger(newLogger(e)))
	defer root.Dispose()
	c := root.Context()
	if _, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict}); err != nil {
		return nil, nil, err
	}
	rr, err := replay.Run(ctx, c, live.NewManager(c, memory.New()), orig.Records)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", orig.Info.ID, err)
	}
	steps := make([]replayedStep, 0, len(rr.Steps))
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
	var errs []string
	for _, err := range rr.Errors {
		var ie *invariants.InvariantError
		switch {
		case errors.As(err, &ie):
			errs = append(errs, "refused by the invariants plugin: "+ie.Error())
		case errors.Is(err, replay.ErrDiverged), errors.Is(err, replay.ErrExhausted):
			errs = append(errs, err.Error())
		}
	}
	return steps, errs, nil
}

// replayedStep is one line of the report.
type replayedStep struct {
	replay.StepComparison
	Note string `json:"note"`
}
