package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"text/tabwriter"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// againstReport is one session of `replay --against`, as --json prints
// it.
type againstReport struct {
	Log     string `json:"log"`
	Session string `json:"session,omitempty"`
	// Steps counts the recorded steps, Identical the requests built now
	// that equal the recorded ones.
	Steps      int                `json:"steps"`
	Identical  int                `json:"identical"`
	Divergence *replay.Divergence `json:"divergence,omitempty"`
	// Fork is the session --live wrote, a fork of the original.
	Fork  string `json:"fork,omitempty"`
	Error string `json:"error,omitempty"`
}

// cmdReplayAgainst re-runs the recorded user turns of each session
// (ids, log files, or the logs of a store directory) through the
// composition in file, and reports the first request that differs.
func cmdReplayAgainst(ctx context.Context, e *env, cfg, file string, liveRun, asJSON bool, args []string) error {
	logs, err := expandLogs(args)
	if err != nil {
		return err
	}
	comp, err := openHost(e, file)
	if err != nil {
		return err
	}
	defer comp.close()
	agent, err := service(comp, agentloop.AgentService)
	if err != nil {
		return err
	}
	c := comp.rt.Context()
	// The reruns are checked like the recordings were.
	if _, err := c.PluginAs("replay-invariants", invariants.New(), &invariants.Config{Mode: invariants.ModeStrict}); err != nil {
		return err
	}
	mgr := live.NewManager(c, memory.New())

	var h *host
	defer func() {
		if h != nil {
			_ = h.close()
		}
	}()
	failed := false
	reports := make([]againstReport, 0, len(logs))
	for k, arg := range logs {
		fmt.Fprintf(e.stderr, "[%d/%d] %s\n", k+1, len(logs), arg)
		rep := againstReport{Log: arg}
		if err := againstOne(ctx, e, cfg, &h, c, mgr, agent, liveRun, arg, &rep); err != nil {
			var ce *configError
			if errors.As(err, &ce) {
				return err
			}
			rep.Error = err.Error()
		}
		failed = failed || rep.Error != "" || rep.Divergence != nil
		reports = append(reports, rep)
	}
	if asJSON {
		if err := printJSON(e.stdout, reports); err != nil {
			return err
		}
	} else {
		printAgainst(e, reports)
	}
	if failed {
		return silentError{exitFailed}
	}
	return nil
}

// expandLogs replaces each directory argument (a jsonl store) by its
// logs, in name order.
func expandLogs(args []string) ([]string, error) {
	var out []string
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.IsDir() {
			out = append(out, a)
			continue
		}
		files, err := filepath.Glob(filepath.Join(a, "*.jsonl"))
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, notFoundf("%s: no session logs (*.jsonl) in the directory", a)
		}
		out = append(out, files...)
	}
	return out, nil
}

func againstOne(ctx context.Context, e *env, cfg string, h **host, c *bus.Context, mgr *live.Manager, agent *agentloop.Agent, liveRun bool, arg string, rep *againstReport) error {
	data, err := readLog(ctx, e, cfg, h, arg)
	if err != nil {
		return err
	}
	lr, err := replay.AgainstLog(ctx, c, agent, data, replay.AgainstOptions{})
	if lr != nil {
		rep.Session, rep.Steps = lr.Session, lr.Steps
	}
	if err != nil {
		return err
	}
	res := lr.Result
	rep.Identical, rep.Divergence = res.Identical, res.Divergence
	if res.Divergence == nil || !liveRun {
		return nil
	}
	// From the divergence on, the composition's provider and tools answer,
	// on a fork of the original in the -c store.
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return fmt.Errorf("--live writes a fork in the -c store: name the session by id, not by file")
	}
	stored, err := storedSessions(e, cfg, h)
	if err != nil {
		return err
	}
	// The fork lives on the composition's bus (its invariants check it),
	// in the -c store.
	at := int64(res.DivergedTurn) - 1
	child, err := live.NewManager(c, stored.Store()).Fork(ctx, lr.Session, at)
	if err != nil {
		return err
	}
	rep.Fork = child.ID()
	lres, err := replay.Against(ctx, c, mgr, agent, lr.Log.Records, replay.AgainstOptions{Live: true, Session: child, From: res.DivergedTurn})
	if err != nil {
		return err
	}
	if err := child.Flush(ctx); err != nil {
		return err
	}
	for _, err := range lres.Errors {
		fmt.Fprintf(e.stderr, "%s: live: %v\n", arg, err)
	}
	return nil
}

// printAgainst prints the summary table, then each divergence's diff.
func printAgainst(e *env, reports []againstReport) {
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tSTEPS\tIDENTICAL\tFIRST DIVERGENCE")
	same := 0
	for _, r := range reports {
		first := "none"
		switch {
		case r.Error != "":
			first = "error: " + r.Error
		case r.Divergence != nil:
			first = divergenceAt(r.Divergence)
		default:
			same++
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", orDash(r.Session, r.Log), r.Steps, r.Identical, first)
	}
	_ = tw.Flush()
	for _, r := range reports {
		if d := r.Divergence; d != nil {
			what := divergenceAt(d)
			if d.NotSent == "" {
				what += " differs"
			}
			fmt.Fprintf(e.stdout, "\n%s: %s (- recorded, + built now):\n%s", orDash(r.Session, r.Log), what, d.Diff())
			if r.Fork != "" {
				fmt.Fprintf(e.stdout, "live: written as fork %s\n", r.Fork)
			}
		}
	}
	fmt.Fprintf(e.stdout, "%d of %d sessions identical\n", same, len(reports))
}

func divergenceAt(d *replay.Divergence) string {
	if d.OneShot != "" {
		return fmt.Sprintf("turn %d (%s one-shot) %s", d.Turn, d.OneShot, d.Field)
	}
	if d.NotSent != "" {
		return fmt.Sprintf("turn %d step %d request not sent: %s", d.Turn, d.Step, d.NotSent)
	}
	return fmt.Sprintf("turn %d step %d %s", d.Turn, d.Step, d.Field)
}

func orDash(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
