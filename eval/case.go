package eval

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigil-run/vigil/eval/score"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/session"
)

// evalOne runs one recorded session through the candidate, scores its
// pairs and logs them: the eval/score records, then the eval/case that
// cites them. A session that cannot be run is a case with an error; an
// error of the eval session itself, a cancelled run or a spent budget
// (ErrBudget) is returned and logs no case.
func (r *runner) evalOne(ctx context.Context, src Source) (*Case, error) {
	c := &Case{CaseData: CaseData{Session: src.ID, Log: src.Log, Pairs: []PairInfo{}}, Scores: []ScoreData{}}
	pairs, err := r.rerun(ctx, src, &c.CaseData)
	switch {
	case ctx.Err() != nil:
		return nil, ctx.Err()
	case errors.Is(err, ErrBudget):
		return nil, err
	case err != nil:
		c.Error = err.Error()
	}
	var sources []int64
	for _, p := range pairs {
		c.Pairs = append(c.Pairs, PairInfo{Turn: p.Recorded.N, Recorded: src.ID, Candidate: c.Candidate})
		for _, sc := range r.scorers {
			d := ScoreData{Session: src.ID, Turn: p.Recorded.N, Scorer: sc.key}
			res, err := sc.Score(ctx, p)
			switch {
			case ctx.Err() != nil:
				return nil, ctx.Err()
			case errors.Is(err, ErrBudget):
				return nil, err
			case err != nil:
				d.Error = err.Error()
				d.Reason = "could not score: " + err.Error()
			default:
				d.Result = res
			}
			rec, err := r.ev.Append(ctx, session.Event{Type: TypeScore, Ignorable: true, Data: d})
			if err != nil {
				return nil, fmt.Errorf("eval: %s: %w", r.ev.ID(), err)
			}
			sources = append(sources, rec.Seq())
			c.Scores = append(c.Scores, d)
		}
	}
	if _, err := r.ev.Append(ctx, session.Event{Type: TypeCase, Ignorable: true, Sources: sources, Data: c.CaseData}); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", r.ev.ID(), err)
	}
	// Flushed with each case: a run killed later does not ask it again.
	if err := r.ev.Flush(ctx); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", r.ev.ID(), err)
	}
	return c, nil
}

// rerun runs src through the candidate on a new session of the store
// and returns its pairs: each recorded turn with a prompt and the
// candidate's turn of the same number.
func (r *runner) rerun(ctx context.Context, src Source, c *CaseData) ([]score.Pair, error) {
	log, err := load(ctx, r.store, src)
	if err != nil {
		return nil, err
	}
	c.Session = log.Info.ID
	sess, err := r.cands.CreateOwned(ctx, log.Info.Tenant, By)
	if err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	c.Candidate = sess.ID()
	defer func() { _ = sess.Close(context.WithoutCancel(ctx)) }()
	// Mounted before Against prepends its own: the calls it passes on
	// (from the divergence on) come here.
	off := listenTools(r.o.Candidate.C, sess.ID(), newRecordedCalls(log.Records), r.s.Unanswered == "live")
	res, err := replay.Against(ctx, r.o.Candidate.C, r.cands, r.o.Candidate.Agent, log.Records, replay.AgainstOptions{Live: true, Session: sess})
	off()
	r.mu.Lock()
	c.Live = r.live[sess.ID()]
	delete(r.live, sess.ID())
	r.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if ferr := sess.Flush(ctx); ferr != nil {
		return nil, fmt.Errorf("eval: %s: %w", sess.ID(), ferr)
	}
	for _, e := range res.Errors {
		if errors.Is(e, ErrBudget) {
			return nil, e
		}
	}
	if d := res.Divergence; d != nil {
		c.Diverged = &Diverged{Turn: d.Turn, Step: d.Step, Field: d.Field}
	}
	return r.pairs(log.Info.ID, log.Records, sess.Records(), res.Divergence), nil
}

// pairs matches the recorded turns with a prompt to the candidate's
// turns of the same number (a zero Turn where the candidate ran none).
func (r *runner) pairs(id string, recorded, candidate []session.Record, d *replay.Divergence) []score.Pair {
	cand := map[int]score.Turn{}
	for _, t := range Turns(candidate, r.prices) {
		cand[t.N] = t
	}
	var out []score.Pair
	for _, t := range Turns(recorded, r.prices) {
		if t.Prompt == "" {
			continue // a continuation: no prompt to answer
		}
		p := score.Pair{Session: id, Recorded: t, Candidate: cand[t.N]}
		switch {
		case d == nil || t.N < d.Turn:
		case t.N == d.Turn:
			p.Diverged = max(d.Step, 1)
		default:
			p.Diverged = 1
		}
		out = append(out, p)
	}
	return out
}
