package eval

import (
	"cmp"
	"slices"
)

// Report is a run as `vigil eval diff` compares it: from an eval session
// (ReadRun) or a `vigil eval --json` file.
type Report struct {
	Eval  string `json:"eval"`
	Cases []Case `json:"cases"`
}

// Diff is what changed between two runs A and B.
type Diff struct {
	A, B    string        `json:"-"`
	Scorers []ScorerDelta `json:"scorers"`
	// Changed are the pairs both runs scored whose score or verdict
	// changed, by session, turn and scorer.
	Changed []PairDelta `json:"changed"`
	// OnlyA and OnlyB count the pairs one run scored and the other not.
	OnlyA int `json:"only_a"`
	OnlyB int `json:"only_b"`
}

// ScorerDelta is a scorer's mean and pass rate in each run.
type ScorerDelta struct {
	Scorer    string  `json:"scorer"`
	MeanA     float64 `json:"mean_a"`
	MeanB     float64 `json:"mean_b"`
	Delta     float64 `json:"delta"`
	PassRateA float64 `json:"pass_rate_a"`
	PassRateB float64 `json:"pass_rate_b"`
	PairsA    int     `json:"pairs_a"`
	PairsB    int     `json:"pairs_b"`
}

// PairDelta is one pair whose score changed.
type PairDelta struct {
	Session string  `json:"session"`
	Turn    int     `json:"turn"`
	Scorer  string  `json:"scorer"`
	A       float64 `json:"a"`
	B       float64 `json:"b"`
	PassA   bool    `json:"pass_a"`
	PassB   bool    `json:"pass_b"`
}

type pairKey struct {
	session string
	turn    int
	scorer  string
}

// Compare compares run a with run b: each scorer's mean over its pairs
// in each (in a's order of scorers, then b's new ones), and each pair
// scored in both whose score or verdict differs.
func Compare(a, b *Report) Diff {
	d := Diff{A: a.Eval, B: b.Eval}
	sa, sb := scoresOf(a), scoresOf(b)
	var order []string
	stats := map[string]*ScorerDelta{}
	tally := func(side map[pairKey]ScoreData, isA bool) {
		for k, s := range side {
			st := stats[k.scorer]
			if st == nil {
				st = &ScorerDelta{Scorer: k.scorer}
				stats[k.scorer] = st
				order = append(order, k.scorer)
			}
			pass := 0.0
			if s.Pass {
				pass = 1
			}
			if isA {
				st.PairsA++
				st.MeanA += s.Score
				st.PassRateA += pass
			} else {
				st.PairsB++
				st.MeanB += s.Score
				st.PassRateB += pass
			}
		}
	}
	tally(sa, true)
	tally(sb, false)
	slices.Sort(order)
	for _, name := range order {
		st := stats[name]
		if st.PairsA > 0 {
			st.MeanA, st.PassRateA = round(st.MeanA/float64(st.PairsA)), round(st.PassRateA/float64(st.PairsA))
		}
		if st.PairsB > 0 {
			st.MeanB, st.PassRateB = round(st.MeanB/float64(st.PairsB)), round(st.PassRateB/float64(st.PairsB))
		}
		st.Delta = round(st.MeanB - st.MeanA)
		d.Scorers = append(d.Scorers, *st)
	}
	for k, x := range sa {
		y, ok := sb[k]
		if !ok {
			d.OnlyA++
			continue
		}
		if x.Score != y.Score || x.Pass != y.Pass {
			d.Changed = append(d.Changed, PairDelta{Session: k.session, Turn: k.turn, Scorer: k.scorer, A: x.Score, B: y.Score, PassA: x.Pass, PassB: y.Pass})
		}
	}
	for k := range sb {
		if _, ok := sa[k]; !ok {
			d.OnlyB++
		}
	}
	slices.SortFunc(d.Changed, func(x, y PairDelta) int {
		return cmp.Or(cmp.Compare(x.Session, y.Session), cmp.Compare(x.Turn, y.Turn), cmp.Compare(x.Scorer, y.Scorer))
	})
	return d
}

func scoresOf(r *Report) map[pairKey]ScoreData {
	out := map[pairKey]ScoreData{}
	for _, c := range r.Cases {
		for _, s := range c.Scores {
			out[pairKey{s.Session, s.Turn, s.Scorer}] = s
		}
	}
	return out
}
