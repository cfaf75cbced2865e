package score

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"

	"github.com/vigil-run/vigil/session"
)

// TrajectoryConfig is the config of `trajectory`: the candidate must call
// the same tools with the same arguments (equal as JSON values: key
// order, spacing and number spelling aside) in the same order as the
// recording. Partial says what a trajectory that differs earns:
//
//   - "none" (the default): 0.
//   - "prefix": the share of calls up to the first difference, of the
//     longer trajectory.
//   - "lcs": the longest common subsequence's share of the longer
//     trajectory: an extra or a missing call costs one call, not the
//     rest.
type TrajectoryConfig struct {
	Bar
	Partial string `json:"partial,omitempty"`
	// IgnoreArguments compares the tools' names only.
	IgnoreArguments bool `json:"ignore_arguments,omitempty"`
}

func (c *TrajectoryConfig) check() error {
	switch c.Partial {
	case "":
		c.Partial = "none"
	case "none", "prefix", "lcs":
	default:
		return keyError("partial", "%q is not none, prefix or lcs", c.Partial)
	}
	return c.Bar.Check()
}

type trajectory struct{ cfg TrajectoryConfig }

func newTrajectory(_ Env, raw json.RawMessage) (Scorer, error) {
	var cfg TrajectoryConfig
	if err := decodeChecked(raw, &cfg); err != nil {
		return nil, err
	}
	return trajectory{cfg}, nil
}

func (s trajectory) Score(_ context.Context, p Pair) (Result, error) {
	rec, cand := p.Recorded.Calls, p.Candidate.Calls
	// Each call's arguments are decoded once, not once a comparison: lcs
	// compares every call with every other.
	ra, ca := decodeArgs(rec), decodeArgs(cand)
	eq := func(i, j int) bool {
		return rec[i].Name == cand[j].Name && (s.cfg.IgnoreArguments || ra[i].equal(ca[j]))
	}
	prefix := 0
	for prefix < len(rec) && prefix < len(cand) && eq(prefix, prefix) {
		prefix++
	}
	longer := max(len(rec), len(cand))
	if prefix == longer {
		return s.cfg.Result(1, fmt.Sprintf("the same %d tool calls in the same order", longer)), nil
	}
	reason := s.difference(rec, cand, prefix)
	switch s.cfg.Partial {
	case "prefix":
		return s.cfg.Result(float64(prefix)/float64(longer), reason), nil
	case "lcs":
		return s.cfg.Result(float64(lcs(len(rec), len(cand), eq))/float64(longer), reason), nil
	}
	return s.cfg.Result(0, reason), nil
}

// difference says where the trajectories part, at call i.
func (s trajectory) difference(rec, cand []session.ToolCall, i int) string {
	switch {
	case i >= len(cand):
		return fmt.Sprintf("call %d: the candidate stopped; the recording called %s", i+1, rec[i].Name)
	case i >= len(rec):
		return fmt.Sprintf("call %d: the candidate called %s after the recording's last call", i+1, cand[i].Name)
	case rec[i].Name != cand[i].Name:
		return fmt.Sprintf("call %d: the candidate called %s, the recording %s", i+1, cand[i].Name, rec[i].Name)
	}
	return fmt.Sprintf("call %d: %s with %s, the recording with %s", i+1, cand[i].Name, excerpt(cand[i].Arguments), excerpt(rec[i].Arguments))
}

// jsonText is a text decoded as one JSON value when it is one.
type jsonText struct {
	raw []byte
	v   any
	ok  bool
}

func decodeText(s string) jsonText {
	v, ok := decodeJSON(s)
	return jsonText{raw: bytes.TrimSpace([]byte(s)), v: v, ok: ok}
}

// equal is JSONEqual on decoded texts.
func (a jsonText) equal(b jsonText) bool {
	if !a.ok || !b.ok {
		return a.ok == b.ok && bytes.Equal(a.raw, b.raw)
	}
	return jsonValueEqual(a.v, b.v)
}

// decodeArgs decodes each call's arguments.
func decodeArgs(calls []session.ToolCall) []jsonText {
	out := make([]jsonText, len(calls))
	for i, c := range calls {
		out[i] = decodeText(c.Arguments)
	}
	return out
}

// lcs is the length of the longest common subsequence of two sequences
// of lengths n and m, eq comparing their elements.
func lcs(n, m int, eq func(i, j int) bool) int {
	prev, cur := make([]int, m+1), make([]int, m+1)
	for i := 1; i <= n; i++ {
		for j := 1; j <= m; j++ {
			if eq(i-1, j-1) {
				cur[j] = prev[j-1] + 1
			} else {
				cur[j] = max(prev[j], cur[j-1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[m]
}

// JSONEqual reports whether a and b are the same JSON value: objects
// equal key by key whatever their order, numbers equal by value ("1",
// "1.0" and "1e0" alike; integers beyond float64's precision kept
// apart). Text that is not one JSON value equals only the same bytes,
// spaces at the ends aside: a model's broken arguments match only
// themselves.
func JSONEqual(a, b string) bool { return decodeText(a).equal(decodeText(b)) }

// decodeJSON decodes s as exactly one JSON value, numbers kept as text.
func decodeJSON(s string) (any, bool) {
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false
	}
	return v, true
}

func jsonValueEqual(a, b any) bool {
	switch x := a.(type) {
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !jsonValueEqual(v, w) {
				return false
			}
		}
		return true
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !jsonValueEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case json.Number:
		y, ok := b.(json.Number)
		return ok && numberEqual(x, y)
	}
	return a == b // strings, booleans, null
}

// numberEqual compares two JSON numbers by value, at a precision far
// beyond float64's, so distinct large integers stay distinct.
func numberEqual(a, b json.Number) bool {
	if a == b {
		return true
	}
	x, _, errA := big.ParseFloat(string(a), 10, 512, big.ToNearestEven)
	y, _, errB := big.ParseFloat(string(b), 10, 512, big.ToNearestEven)
	return errA == nil && errB == nil && x.Cmp(y) == 0
}
