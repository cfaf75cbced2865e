package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/eval/score"
	"github.com/vigil-run/vigil/plugins/budget"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// Candidate is the composition evaluated: its bus and its agent.
type Candidate struct {
	C     *bus.Context
	Agent *agentloop.Agent
}

// JudgeModel is the model Env.Ask reaches: its provider and the header
// of its one-shots.
type JudgeModel struct {
	Provider agentloop.Provider
	Header   session.Header
}

// Options are a run's parts besides its suite.
type Options struct {
	Candidate Candidate
	// Sessions is the configured store's manager: the corpus's ids and
	// query are read from its store, the eval session and the
	// candidates' runs are written to it, the eval session on its bus.
	Sessions *live.Manager
	// C is the bus of Sessions: the judge's one-shots go through its
	// llm/stream.
	C *bus.Context
	// Judge is the model of Env.Ask (nil: none).
	Judge *JudgeModel
	// Prices price usage (nil: the suite's).
	Prices map[string]budget.Price
	// Resume continues the eval session of that id: its finished
	// sessions are not run again.
	Resume string
	// Progress, when set, is told when the eval session is known and
	// when each session starts and ends.
	Progress func(Progress)
}

// Progress is a step of a run, for a progress line.
type Progress struct {
	// Eval is the eval session's id.
	Eval string
	// K of N sessions; Case is set once the session K ended, Source
	// when it starts.
	K, N   int
	Source Source
	Case   *Case
	// Skipped: the session was finished in the run resumed.
	Skipped bool
}

// Result is a finished run.
type Result struct {
	Eval    string  `json:"eval"`
	Suite   string  `json:"suite"`
	Cases   []Case  `json:"cases"`
	Summary Summary `json:"summary"`
	Spent   Spent   `json:"spent"`
	// NotRun are the sessions left when the budget was spent: resuming
	// the run with a larger budget runs them.
	NotRun []Source `json:"not_run,omitempty"`
}

// Run runs the suite: every session of its corpus through the
// candidate, each pair scored by every scorer, all of it logged in the
// eval session. A session that cannot be run is a case with an error; a
// session the budget stopped is left for a resumed run.
func Run(ctx context.Context, s *Suite, o Options) (*Result, error) {
	if o.Sessions == nil || o.C == nil || o.Candidate.C == nil || o.Candidate.Agent == nil {
		return nil, errors.New("eval: run: a store and a candidate are required")
	}
	prices := o.Prices
	if s.Prices != nil {
		prices = s.Prices
	}
	store := o.Sessions.Store()
	ev, prev, sources, err := open(ctx, s, o, store)
	if err != nil {
		return nil, err
	}
	defer func() { _ = ev.Close(context.WithoutCancel(ctx)) }()
	if o.Progress != nil {
		o.Progress(Progress{Eval: ev.ID(), N: len(sources)})
	}
	sp := &spend{limit: s.Budget, prices: prices}
	r := &runner{s: s, o: o, ev: ev, sp: sp, prices: prices, store: store,
		cands: live.NewManager(o.Candidate.C, store), live: map[string]int{}}
	defer r.listen()()
	if r.scorers, err = r.makeScorers(); err != nil {
		return nil, err
	}
	defer r.closeScorers()
	res := &Result{Eval: ev.ID(), Suite: s.Path}
	if prev != nil {
		res.Cases = append(res.Cases, prev.Cases...)
	}
	if err := r.runAll(ctx, sources, prev, res); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	res.Summary = Summarize(s, res.Cases)
	if len(res.NotRun) > 0 {
		res.Summary.Missed = append(res.Summary.Missed, fmt.Sprintf("%d sessions not run: the budget is spent (resume with --resume %s)", len(res.NotRun), ev.ID()))
	}
	res.Spent = sp.spent()
	if len(res.NotRun) == 0 {
		if _, err := ev.Append(ctx, session.Event{Type: TypeEnd, Ignorable: true, Data: res.Summary}); err != nil {
			return nil, fmt.Errorf("eval: %s: %w", ev.ID(), err)
		}
	}
	if err := ev.Flush(ctx); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", ev.ID(), err)
	}
	return res, nil
}

// runAll runs the sources prev did not finish, s.Concurrency at once,
// into res.
func (r *runner) runAll(ctx context.Context, sources []Source, prev *Logged, res *Result) error {
	var mu sync.Mutex
	progress := func(p Progress) {
		if r.o.Progress != nil {
			p.Eval, p.N = r.ev.ID(), len(sources)
			r.o.Progress(p)
		}
	}
	notRun := func(src Source) {
		mu.Lock()
		res.NotRun = append(res.NotRun, src)
		mu.Unlock()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.s.Concurrency)
	for k, src := range sources {
		if prev != nil && prev.Done(src.ID) {
			progress(Progress{K: k + 1, Source: src, Skipped: true})
			continue
		}
		g.Go(func() error {
			if r.sp.exhausted() || gctx.Err() != nil {
				notRun(src)
				return nil
			}
			progress(Progress{K: k + 1, Source: src})
			c, err := r.evalOne(gctx, src)
			switch {
			case errors.Is(err, ErrBudget):
				notRun(src)
				return nil
			case err != nil:
				return err
			}
			mu.Lock()
			res.Cases = append(res.Cases, *c)
			mu.Unlock()
			progress(Progress{K: k + 1, Source: src, Case: c})
			return nil
		})
	}
	return g.Wait()
}

// open creates the eval session and logs eval/run, or opens the one to
// resume and reads what it finished.
func open(ctx context.Context, s *Suite, o Options, store session.Store) (*live.Session, *Logged, []Source, error) {
	if o.Resume != "" {
		ev, err := o.Sessions.Open(ctx, o.Resume)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("eval: resume %s: %w", o.Resume, err)
		}
		prev, err := ReadRun(ev.ID(), ev.Records())
		if err != nil {
			_ = ev.Close(ctx)
			return nil, nil, nil, err
		}
		if prev.Info.Digest != s.Digest {
			_ = ev.Close(ctx)
			return nil, nil, nil, fmt.Errorf("eval: resume %s: the suite asks for another run than that one (corpus, candidate, scorers, judge or prices changed: digest %.12s then, %.12s now)", o.Resume, prev.Info.Digest, s.Digest)
		}
		return ev, prev, prev.Info.Sources(), nil
	}
	sources, err := s.Corpus.Resolve(ctx, store)
	if err != nil {
		return nil, nil, nil, err
	}
	ev, err := o.Sessions.CreateOwned(ctx, "", By)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("eval: %w", err)
	}
	keys := make([]string, len(s.Scorers))
	for i, sc := range s.Scorers {
		keys[i] = sc.Key()
	}
	info := RunInfo{Suite: s.Path, Digest: s.Digest, Candidate: s.Candidate, Scorers: keys, Sessions: sources}
	if _, err := ev.Append(ctx, session.Event{Type: TypeRun, Ignorable: true, Data: info}); err != nil {
		_ = ev.Close(ctx)
		return nil, nil, nil, fmt.Errorf("eval: %s: %w", ev.ID(), err)
	}
	// Flushed at once: a run killed from here on can be resumed.
	if err := ev.Flush(ctx); err != nil {
		_ = ev.Close(ctx)
		return nil, nil, nil, fmt.Errorf("eval: %s: %w", ev.ID(), err)
	}
	return ev, nil, sources, nil
}

// Sources are the sessions the run was to evaluate.
func (i RunInfo) Sources() []Source { return i.Sessions }

type runner struct {
	s      *Suite
	o      Options
	ev     *live.Session
	sp     *spend
	prices map[string]budget.Price
	store  session.Store
	cands  *live.Manager
	// scorers are the suite's, in its order.
	scorers []namedScorer

	mu   sync.Mutex
	live map[string]int // live requests by candidate session
}

type namedScorer struct {
	key string
	score.Scorer
}

// listen mounts the budget on the candidate's bus and the eval
// session's (the judge's one-shots).
func (r *runner) listen() func() {
	off1 := r.sp.listen(r.o.Candidate.C, func(id string) {
		r.mu.Lock()
		r.live[id]++
		r.mu.Unlock()
	})
	off2 := r.sp.listen(r.o.C, nil)
	return func() { off2(); off1() }
}

func (r *runner) makeScorers() ([]namedScorer, error) {
	env := score.Env{Dir: r.s.Dir}
	if r.s.Judge != nil && r.o.Judge != nil {
		env.Ask = score.AskIn(r.o.C, r.o.Judge.Provider, r.ev, r.o.Judge.Header)
	}
	out := make([]namedScorer, 0, len(r.s.Scorers))
	for _, sc := range r.s.Scorers {
		raw, err := json.Marshal(sc.Config)
		if err != nil {
			return nil, fmt.Errorf("eval: scorer %s: %w", sc.Key(), err)
		}
		x, err := score.New(sc.Name, env, raw)
		if err != nil {
			for _, m := range out {
				_ = score.Close(m.Scorer)
			}
			return nil, fmt.Errorf("eval: scorer %s: %w", sc.Key(), err)
		}
		out = append(out, namedScorer{key: sc.Key(), Scorer: x})
	}
	return out, nil
}

// closeScorers lets go of what the scorers hold (a scorer process).
func (r *runner) closeScorers() {
	for _, s := range r.scorers {
		_ = score.Close(s.Scorer)
	}
}
