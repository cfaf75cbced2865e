package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/eval"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

func newEvalCmd(e *env) *cobra.Command {
	var cfg, resume, junit, junitBy string
	var asJSON, fresh bool
	cmd := &cobra.Command{
		Use:   "eval SUITE",
		Short: "Score a candidate composition over stored sessions",
		Long: `Run the suite file SUITE: each session of its corpus (ids in the store of
the composition -c names, JSONL logs or directories of them, or a query
over that store) is re-run through the candidate composition with the
recorded model replies and tool results while its requests equal the
recorded ones; from the first divergence on the candidate's own provider
answers, and a tool call gets the recorded result of a call of the same
tool with the same arguments, else is refused or run (unanswered_calls).
Each recorded turn and the candidate's turn on the same prompt are a pair
that every scorer of the suite scores.

Progress goes to stderr, a table to stdout (--json: the whole result).
--junit FILE writes JUnit XML: a testsuite per scorer (--junit-by
session: per recorded session), a testcase per pair.

The run is logged as an eval session in the -c store: eval/run, an
eval/score per pair and scorer, an eval/case per finished session, the
judge's one-shots, eval/end. The candidates' runs are stored sessions too,
named in eval/case. A run that was stopped (killed, Ctrl-C, the budget
spent) is resumed by running the same suite again (or --resume ID): the
finished sessions are not asked again. --fresh starts a new run.

Exit 0 when every threshold of the suite is met, 1 when one is missed, 2
when the suite or a composition cannot be loaded.`,
		Example: `  vigil eval evals/prompt-v2.yaml
  vigil eval evals/prompt-v2.yaml --json > run.json
  vigil eval evals/prompt-v2.yaml --junit eval.xml
  vigil eval diff 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A run.json`,
		Args: exactArgs(1, "a suite file"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			if junitBy != eval.ByScorer && junitBy != eval.BySession {
				return usagef("--junit-by takes %s or %s, not %q", eval.ByScorer, eval.BySession, junitBy)
			}
			if fresh && resume != "" {
				return usagef("--fresh and --resume exclude each other")
			}
			return cmdEval(cmd.Context(), e, evalFlags{cfg: cfg, suite: args[0], resume: resume, fresh: fresh, junit: junit, junitBy: junitBy, asJSON: asJSON})
		}),
	}
	configFlag(cmd, &cfg)
	jsonFlag(cmd, &asJSON, "the result")
	cmd.Flags().StringVar(&resume, "resume", "", "continue the eval session of this id")
	cmd.Flags().BoolVar(&fresh, "fresh", false, "start a new run even if one of this suite was stopped")
	cmd.Flags().StringVar(&junit, "junit", "", "write JUnit XML to this file")
	cmd.Flags().StringVar(&junitBy, "junit-by", eval.ByScorer, "JUnit testsuites per scorer or per session")
	cmd.AddCommand(newEvalDiffCmd(e))
	return cmd
}

type evalFlags struct {
	cfg, suite, resume, junit, junitBy string
	fresh, asJSON                      bool
}

func cmdEval(ctx context.Context, e *env, f evalFlags) error {
	s, err := eval.LoadSuite(f.suite)
	if err != nil {
		var nf *os.PathError
		if errors.As(err, &nf) {
			return notFoundf("%v", err)
		}
		return &configError{err}
	}
	store, err := openStoreHost(e, f.cfg)
	if err != nil {
		return err
	}
	defer func() { _ = store.close() }()
	mgr, err := service(store, live.Sessions)
	if err != nil {
		return err
	}
	cand, err := openHost(e, s.Candidate)
	if err != nil {
		return err
	}
	defer func() { _ = cand.close() }()
	agent, err := service(cand, agentloop.AgentService)
	if err != nil {
		return err
	}
	c := cand.rt.Context()
	// The candidate's runs are checked as the recordings were.
	if _, err := c.PluginAs("eval-invariants", invariants.New(), &invariants.Config{Mode: invariants.ModeStrict}); err != nil {
		return err
	}
	o := eval.Options{Candidate: eval.Candidate{C: c, Agent: agent}, Sessions: mgr, C: store.rt.Context(),
		Prices: findPrices(cand.comp.File().Entries), Resume: f.resume}
	var closeJudge func()
	if o.Judge, closeJudge, err = openJudge(e, s, cand); err != nil {
		return err
	}
	defer closeJudge()
	if o.Resume == "" && !f.fresh {
		if o.Resume, err = eval.Unfinished(ctx, mgr.Store(), s.Digest); err != nil {
			return err
		}
		if o.Resume != "" {
			e.notef("resuming eval session %s, stopped before it finished (--fresh starts a new run)", o.Resume)
		}
	}
	if !e.quiet {
		o.Progress = func(p eval.Progress) { printEvalProgress(e.stderr, p) }
	}
	res, err := eval.Run(ctx, s, o)
	if err != nil {
		return err
	}
	if f.junit != "" {
		if err := writeJUnit(f.junit, res, f.junitBy); err != nil {
			return err
		}
	}
	if f.asJSON {
		if err := printJSON(e.stdout, res); err != nil {
			return err
		}
	} else {
		printEval(e.stdout, res)
	}
	if len(res.Summary.Missed) > 0 {
		return silentError{exitFailed}
	}
	return nil
}

// openJudge is the model of the suite's judge: the provider of its
// plugins (the candidate's when it names none).
func openJudge(e *env, s *eval.Suite, cand *host) (*eval.JudgeModel, func(), error) {
	done := func() {}
	if s.Judge == nil {
		return nil, done, nil
	}
	h := cand
	if s.Judge.Plugins != "" {
		var err error
		if h, err = openHost(e, s.Judge.Plugins); err != nil {
			return nil, done, err
		}
		done = func() { _ = h.close() }
	}
	p, err := agentloop.ProviderService.Get(h.rt.Context())
	if err != nil {
		done()
		return nil, func() {}, &configError{fmt.Errorf("%s: judge: no provider: %w", s.Path, err)}
	}
	return &eval.JudgeModel{Provider: p, Header: session.Header{Model: s.Judge.Model}}, done, nil
}

func writeJUnit(path string, res *eval.Result, by string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := eval.WriteJUnit(f, res, by); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// printEvalProgress writes a line per session started, skipped and
// ended.
func printEvalProgress(w io.Writer, p eval.Progress) {
	switch {
	case p.K == 0:
		fmt.Fprintf(w, "eval session %s: %d sessions\n", p.Eval, p.N)
	case p.Skipped:
		fmt.Fprintf(w, "[%d/%d] %s: done in the run resumed\n", p.K, p.N, p.Source)
	case p.Case == nil:
		fmt.Fprintf(w, "[%d/%d] %s\n", p.K, p.N, p.Source)
	default:
		fmt.Fprintf(w, "[%d/%d] %s: %s\n", p.K, p.N, p.Source, caseLine(p.Case))
	}
}

// caseLine says how a case went: where it diverged and its scores.
func caseLine(c *eval.Case) string {
	if c.Error != "" {
		return "error: " + c.Error
	}
	parts := []string{divergedAt(c.Diverged)}
	means, order := caseMeans(c)
	for _, k := range order {
		parts = append(parts, k+" "+strconv.FormatFloat(means[k], 'f', 2, 64))
	}
	return strings.Join(parts, ", ")
}

func divergedAt(d *eval.Diverged) string {
	if d == nil {
		return "identical"
	}
	return fmt.Sprintf("diverged turn %d step %d (%s)", d.Turn, d.Step, d.Field)
}

// caseMeans is each scorer's mean over a case's pairs, and the scorers
// in order.
func caseMeans(c *eval.Case) (map[string]float64, []string) {
	sum, n := map[string]float64{}, map[string]int{}
	var order []string
	for _, s := range c.Scores {
		if _, ok := n[s.Scorer]; !ok {
			order = append(order, s.Scorer)
		}
		sum[s.Scorer] += s.Score
		n[s.Scorer]++
	}
	for k := range sum {
		sum[k] /= float64(n[k])
	}
	return sum, order
}

// printEval prints the sessions, the scorers and the bars missed.
func printEval(w io.Writer, res *eval.Result) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	head := "SESSION\tPAIRS\tDIVERGED"
	for _, sc := range res.Summary.Scorers {
		head += "\t" + strings.ToUpper(sc.Scorer)
	}
	fmt.Fprintln(tw, head)
	for i := range res.Cases {
		c := &res.Cases[i]
		if c.Error != "" {
			fmt.Fprintf(tw, "%s\t%d\terror: %s\n", c.Session, len(c.Pairs), c.Error)
			continue
		}
		div := "none"
		if d := c.Diverged; d != nil {
			div = fmt.Sprintf("turn %d step %d %s", d.Turn, d.Step, d.Field)
		}
		line := fmt.Sprintf("%s\t%d\t%s", c.Session, len(c.Pairs), div)
		means, _ := caseMeans(c)
		for _, sc := range res.Summary.Scorers {
			line += "\t" + strconv.FormatFloat(means[sc.Scorer], 'f', 2, 64)
		}
		fmt.Fprintln(tw, line)
	}
	_ = tw.Flush()
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCORER\tMEAN\tPASSED\tTHRESHOLD")
	for _, sc := range res.Summary.Scorers {
		bar := "-"
		if sc.Threshold != nil {
			bar = "≥ " + strconv.FormatFloat(*sc.Threshold, 'g', -1, 64)
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%d/%d\t%s\n", sc.Scorer, sc.Mean, sc.Passed, sc.Pairs, bar)
	}
	_ = tw.Flush()
	fmt.Fprintf(w, "\neval session %s: %d sessions, %d pairs, %d live calls\n", res.Eval, res.Summary.Sessions, res.Summary.Pairs, res.Spent.Calls)
	for _, m := range res.Summary.Missed {
		fmt.Fprintf(w, "missed: %s\n", m)
	}
}

func newEvalDiffCmd(e *env) *cobra.Command {
	var cfg string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two eval runs",
		Long: `Compare two runs of vigil eval, each an eval session id (in the -c store)
or a file vigil eval --json wrote: each scorer's mean and pass rate in A
and in B, and every pair scored in both whose score or verdict changed.`,
		Example: `  vigil eval diff 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A 01JD8Y2M7R3B5C9D1E4F6G8H0J
  vigil eval diff before.json after.json --json`,
		Args: exactArgs(2, "two eval runs (ids or --json files)"),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var h *host
			defer func() {
				if h != nil {
					_ = h.close()
				}
			}()
			var reps [2]*eval.Report
			for i, arg := range args {
				r, err := readEvalReport(cmd.Context(), e, cfg, &h, arg)
				if err != nil {
					return err
				}
				reps[i] = r
			}
			d := eval.Compare(reps[0], reps[1])
			if asJSON {
				return printJSON(e.stdout, d)
			}
			printEvalDiff(e.stdout, args[0], args[1], d)
			return nil
		}),
	}
	configFlag(cmd, &cfg)
	jsonFlag(cmd, &asJSON, "the comparison")
	return cmd
}

// readEvalReport reads a run: a --json file, else an eval session.
func readEvalReport(ctx context.Context, e *env, cfg string, h **host, arg string) (*eval.Report, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		data, err := os.ReadFile(arg)
		if err != nil {
			return nil, err
		}
		var rep eval.Report
		if err := json.Unmarshal(data, &rep); err != nil {
			return nil, fmt.Errorf("%s: not the output of vigil eval --json: %w", filepath.Base(arg), err)
		}
		return &rep, nil
	}
	if !session.ValidID(arg) {
		return nil, notFoundf("%s: no such file or eval session id", arg)
	}
	mgr, err := storedSessions(e, cfg, h)
	if err != nil {
		return nil, err
	}
	log, err := mgr.Store().Load(ctx, arg)
	if err != nil {
		return nil, err
	}
	run, err := eval.ReadRun(arg, log.Records)
	if err != nil {
		return nil, err
	}
	return &eval.Report{Eval: run.ID, Cases: run.Cases}, nil
}

func printEvalDiff(w io.Writer, a, b string, d eval.Diff) {
	fmt.Fprintf(w, "A: %s\nB: %s\n\n", a, b)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SCORER\tMEAN A\tMEAN B\tDELTA\tPASS A\tPASS B")
	for _, s := range d.Scorers {
		fmt.Fprintf(tw, "%s\t%.3f\t%.3f\t%+.3f\t%.3f\t%.3f\n", s.Scorer, s.MeanA, s.MeanB, s.Delta, s.PassRateA, s.PassRateB)
	}
	_ = tw.Flush()
	if len(d.Changed) > 0 {
		fmt.Fprintln(w)
		tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tTURN\tSCORER\tA\tB")
		for _, c := range d.Changed {
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\n", c.Session, c.Turn, c.Scorer, verdict(c.A, c.PassA), verdict(c.B, c.PassB))
		}
		_ = tw.Flush()
	}
	fmt.Fprintf(w, "\n%d pairs changed; %d only in A, %d only in B\n", len(d.Changed), d.OnlyA, d.OnlyB)
}

func verdict(score float64, pass bool) string {
	v := "fail"
	if pass {
		v = "pass"
	}
	return strconv.FormatFloat(score, 'f', 2, 64) + " " + v
}
