package budget_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/budget"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

var t0 = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

// step is one step of a test log: its model's usage and tool calls.
type step struct {
	model    string
	in, out  int
	calls    [][2]string // name, arguments
	noUsage  bool
	duration time.Duration // how long after the turn's start the step ends
}

// logOf appends turns of steps to a new session, the last turn left
// open (the step about to be checked is the next of that turn). The
// record times are t0 plus each step's duration.
func logOf(t *testing.T, turns ...[]step) []session.Record {
	t.Helper()
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	now := t0
	mgr := live.NewManager(root.Context(), memory.New(), live.WithClock(func() time.Time { return now }))
	ctx := context.Background()
	sess, err := mgr.Create(ctx)
	require.NoError(t, err)
	app := func(ev session.Event) session.Record {
		t.Helper()
		r, err := sess.Append(ctx, ev)
		require.NoError(t, err)
		return r
	}
	model := "\x00"
	for ti, steps := range turns {
		turn := ti + 1
		now = t0
		app(session.Event{Type: session.TypeTurnStart, Turn: turn, Data: session.TurnStart{}})
		app(session.Event{Type: session.TypeUserMessage, Turn: turn, Data: session.UserMessage{Content: "go"}})
		for si, st := range steps {
			n := si + 1
			app(session.Event{Type: session.TypeStepStart, Turn: turn, Step: n, Data: session.StepStart{}})
			if st.model != model {
				model = st.model
				app(session.Event{Type: session.TypeRequestHeader, Turn: turn, Data: session.RequestHeader{Reason: session.HeaderChange, Header: session.Header{Model: model}}})
			}
			var msg session.AssistantMessage
			for ci, c := range st.calls {
				msg.ToolCalls = append(msg.ToolCalls, session.ToolCall{ID: callID(turn, n, ci), Name: c[0], Arguments: c[1]})
			}
			ch := app(session.Event{Type: session.TypeAssistantChunk, Turn: turn, Step: n, Data: session.AssistantChunk{Text: "x"}})
			msg.Content = "x"
			app(session.Event{Type: session.TypeAssistantMessage, Turn: turn, Step: n, Sources: []int64{ch.Seq()}, Data: msg})
			for _, c := range msg.ToolCalls {
				call := app(session.Event{Type: session.TypeToolCall, Turn: turn, Step: n, Data: c})
				app(session.Event{Type: session.TypeToolResult, Turn: turn, Step: n, Sources: []int64{call.Seq()}, Data: session.ToolResult{ID: c.ID, Name: c.Name, Content: "ok"}})
			}
			now = t0.Add(st.duration)
			end := session.StepEnd{Finish: session.FinishStop}
			if !st.noUsage {
				end.Usage = &session.Usage{Input: st.in, Output: st.out}
			}
			app(session.Event{Type: session.TypeStepEnd, Turn: turn, Step: n, Data: end})
		}
		if ti < len(turns)-1 {
			app(session.Event{Type: session.TypeTurnEnd, Turn: turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
		}
	}
	return sess.Records()
}

func callID(turn, step, i int) string {
	return "c" + string(rune('0'+turn)) + string(rune('0'+step)) + string(rune('0'+i))
}

func TestCheckLimits(t *testing.T) {
	prices := map[string]budget.Price{"m": {Input: 1, Output: 10}} // $ per million
	ls := func(path string) [2]string { return [2]string{"list_dir", `{"path":"` + path + `"}`} }
	tests := []struct {
		name    string
		cfg     budget.Config
		turns   [][]step
		now     time.Duration // after t0
		model   string        // of the step checked; "m" when empty
		wantCap int
		limit   string // the refusal's Limit; "" when allowed
		message string
	}{
		{name: "no limits", turns: [][]step{{{model: "m", in: 100, out: 50}}}},
		{name: "session tokens: the cap is what remains", cfg: budget.Config{Session: budget.Limits{Tokens: 1000}},
			turns: [][]step{{{model: "m", in: 100, out: 50}}, {{model: "m", in: 200, out: 50}}}, wantCap: 600},
		{name: "session tokens spent", cfg: budget.Config{Session: budget.Limits{Tokens: 400}},
			turns: [][]step{{{model: "m", in: 100, out: 50}}, {{model: "m", in: 200, out: 50}}},
			limit: budget.LimitSessionTokens, message: "budget: the session's tokens are spent: 400 of 400"},
		{name: "turn tokens count this turn only", cfg: budget.Config{Turn: budget.TurnLimits{Tokens: 300}},
			turns: [][]step{{{model: "m", in: 1000, out: 500}}, {{model: "m", in: 200, out: 50}}}, wantCap: 50},
		{name: "turn tokens spent", cfg: budget.Config{Turn: budget.TurnLimits{Tokens: 300}},
			turns: [][]step{{{model: "m", in: 200, out: 50}, {model: "m", in: 40, out: 20}}},
			limit: budget.LimitTurnTokens, message: "budget: the turn's tokens are spent: 310 of 300"},
		{name: "the tightest limit caps", cfg: budget.Config{Session: budget.Limits{Tokens: 5000}, Turn: budget.TurnLimits{Tokens: 500}},
			turns: [][]step{{{model: "m", in: 100, out: 100}}}, wantCap: 300},
		{name: "steps without usage spend nothing", cfg: budget.Config{Turn: budget.TurnLimits{Tokens: 10}},
			turns: [][]step{{{model: "m", noUsage: true}}}, wantCap: 10},
		{name: "session cost: the cap is what remains at the output price", cfg: budget.Config{Session: budget.Limits{Cost: 0.01}, Prices: prices},
			// spent 1000*1/1e6 + 500*10/1e6 = $0.006; $0.004 left buys 400 output tokens
			turns: [][]step{{{model: "m", in: 1000, out: 500}}}, wantCap: 400},
		{name: "session cost spent", cfg: budget.Config{Session: budget.Limits{Cost: 0.005}, Prices: prices},
			turns: [][]step{{{model: "m", in: 1000, out: 500}}},
			limit: budget.LimitSessionCost, message: "budget: the session's cost is spent: $0.006 of $0.005"},
		{name: "turn cost prices each step by its model", cfg: budget.Config{Turn: budget.TurnLimits{Cost: 0.002},
			Prices: map[string]budget.Price{"m": {Input: 1, Output: 10}, "big": {Input: 10, Output: 100}}},
			turns: [][]step{{{model: "m", in: 100, out: 10}, {model: "big", in: 100, out: 10}}}, model: "big",
			limit: budget.LimitTurnCost, message: "budget: the turn's cost is spent: $0.0022 of $0.002"},
		{name: "a cost limit needs the model's price", cfg: budget.Config{Turn: budget.TurnLimits{Cost: 1}, Prices: prices},
			turns: [][]step{{{model: "m", in: 1, out: 1}}}, model: "other",
			limit: budget.LimitPrice, message: `budget: a cost limit is set and model "other" has no price (prices in the budget plugin's config)`},
		{name: "wall clock not reached", cfg: budget.Config{Turn: budget.TurnLimits{WallClock: time.Minute}},
			turns: [][]step{{{model: "m", duration: 30 * time.Second}}}, now: 59 * time.Second},
		{name: "wall clock reached", cfg: budget.Config{Turn: budget.TurnLimits{WallClock: time.Minute}},
			turns: [][]step{{{model: "m", duration: 30 * time.Second}}}, now: 61 * time.Second,
			limit: budget.LimitWallClock, message: "budget: turn 1 has run 1m1s, its wall-clock limit is 1m0s"},
		{name: "repeats below the default", turns: [][]step{{{model: "m", calls: [][2]string{ls(".")}}, {model: "m", calls: [][2]string{ls("."), ls("docs")}}}}},
		{name: "repeats reach the default 3", turns: [][]step{{{model: "m", calls: [][2]string{ls("."), ls(".")}}, {model: "m", calls: [][2]string{ls("docs"), ls(".")}}}},
			limit: budget.LimitRepeats, message: "budget: list_dir was called 3 times with the same arguments in this turn (max_repeats 3)"},
		{name: "repeats are byte-identical arguments", turns: [][]step{{{model: "m", calls: [][2]string{ls("."), {"list_dir", `{"path": "."}`}, ls(".")}}}}},
		{name: "repeats count within the turn", turns: [][]step{{{model: "m", calls: [][2]string{ls("."), ls(".")}}}, {{model: "m", calls: [][2]string{ls(".")}}}}},
		{name: "repeats off", cfg: budget.Config{MaxRepeats: -1}, turns: [][]step{{{model: "m", calls: [][2]string{ls("."), ls("."), ls("."), ls(".")}}}}},
		{name: "max_repeats 1", cfg: budget.Config{MaxRepeats: 1}, turns: [][]step{{{model: "m", calls: [][2]string{{"read_file", `{"path":"a"}`}}}}},
			limit: budget.LimitRepeats, message: "budget: read_file was called 1 times with the same arguments in this turn (max_repeats 1)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recs := logOf(t, tc.turns...)
			model := tc.model
			if model == "" {
				model = "m"
			}
			got, err := tc.cfg.Check(recs, len(tc.turns), model, t0.Add(tc.now))
			if tc.limit == "" {
				require.NoError(t, err)
				assert.Equal(t, tc.wantCap, got)
				return
			}
			be, ok := err.(*agentloop.BudgetError)
			require.True(t, ok, "error %v", err)
			assert.Equal(t, tc.limit, be.Limit)
			assert.Equal(t, tc.message, be.Message)
		})
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name string
		cfg  budget.Config
		want string
	}{
		{"zero is fine", budget.Config{}, ""},
		{"negative tokens", budget.Config{Session: budget.Limits{Tokens: -1}}, "session.tokens"},
		{"negative cost", budget.Config{Turn: budget.TurnLimits{Cost: -0.5}}, "turn.cost"},
		{"negative wall clock", budget.Config{Turn: budget.TurnLimits{WallClock: -time.Second}}, "turn.wall_clock"},
		{"max_repeats -1 is off", budget.Config{MaxRepeats: -1}, ""},
		{"max_repeats -2", budget.Config{MaxRepeats: -2}, "max_repeats"},
		{"negative price", budget.Config{Prices: map[string]budget.Price{"m": {Output: -1}}}, "prices.m.output"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

func TestTallyPerTurnAndSession(t *testing.T) {
	recs := logOf(t,
		[]step{{model: "m", in: 1000, out: 100}, {model: "big", in: 2000, out: 200}},
		[]step{{model: "big", in: 10, out: 1, noUsage: true}, {model: "big", in: 500, out: 50}},
	)
	prices := map[string]budget.Price{"m": {Input: 1, Output: 10}, "big": {Input: 10, Output: 100}}
	cost := func(v float64) *float64 { return &v }

	acc := budget.Tally(recs, prices)
	// m: 1000*1 + 100*10 = 2000e-6; big: 2000*10 + 200*100 = 40000e-6; 500*10+50*100 = 10000e-6
	assert.Equal(t, budget.Spent{Input: 3500, Output: 350, Cost: cost(0.052)}, stripped(acc.Session))
	require.Len(t, acc.Turns, 2)
	assert.Equal(t, 1, acc.Turns[0].Turn)
	assert.Equal(t, budget.Spent{Input: 3000, Output: 300, Cost: cost(0.042)}, stripped(acc.Turns[0].Spent))
	assert.Equal(t, budget.Spent{Input: 500, Output: 50, Cost: cost(0.01)}, stripped(acc.Turns[1].Spent))

	// Without a price for one model, no cost where it was used.
	acc = budget.Tally(recs, map[string]budget.Price{"m": {Input: 1, Output: 10}})
	assert.Nil(t, acc.Session.Cost)
	assert.Equal(t, []string{"big"}, acc.Session.Unpriced)
	assert.Nil(t, acc.Turns[1].Cost)
	// Without a table, usage only.
	acc = budget.Tally(recs, nil)
	assert.Equal(t, budget.Spent{Input: 3500, Output: 350}, stripped(acc.Session))
}

// stripped is s as JSON shows it (the unexported running sum aside).
func stripped(s budget.Spent) budget.Spent {
	return budget.Spent{Input: s.Input, Output: s.Output, Cost: s.Cost, Unpriced: s.Unpriced}
}

// TestTallyCountsOneShots: a one-shot's request/usage (a compaction's
// summary) counts toward the session, priced by the one-shot's own
// model, and toward no turn; the session limits see it.
func TestTallyCountsOneShots(t *testing.T) {
	recs := logOf(t, []step{{model: "m", in: 100, out: 10}}, nil)
	// A one-shot on another model, and its usage (where in the log does
	// not matter to the tally).
	n := int64(len(recs))
	h := session.Header{Model: "small"}
	at := func(seq int64, ev session.Event) session.Record {
		r, err := session.NewRecord(seq, t0, ev)
		require.NoError(t, err)
		return r
	}
	all := append(recs[:n:n],
		at(n, session.Event{Type: session.TypeRequestOneshot, Sources: []int64{1}, Data: session.Oneshot{Purpose: "compaction", SHA256: "x", Messages: 2, Instruction: "sum", Header: &h}}),
		at(n+1, session.Event{Type: session.TypeRequestUsage, Sources: []int64{n}, Data: session.Usage{Input: 200, Output: 20}}))
	prices := map[string]budget.Price{"m": {Input: 1, Output: 10}, "small": {Input: 0.5, Output: 1}}
	cost := func(v float64) *float64 { return &v }
	acc := budget.Tally(all, prices)
	// m: 100*1 + 10*10 = 200e-6; small: 200*0.5 + 20*1 = 120e-6
	assert.Equal(t, budget.Spent{Input: 300, Output: 30, Cost: cost(0.00032)}, stripped(acc.Session))
	assert.Equal(t, budget.Spent{Input: 200, Output: 20, Cost: cost(0.00012)}, stripped(acc.OneShots))
	require.Len(t, acc.Turns, 2)
	assert.Equal(t, 110, acc.Turns[0].Tokens())
	assert.Zero(t, acc.Turns[1].Tokens())

	got, err := (&budget.Config{Session: budget.Limits{Tokens: 400}}).Check(all, 2, "m", t0)
	require.NoError(t, err)
	assert.Equal(t, 70, got, "what remains after the steps and the one-shot")
	_, err = (&budget.Config{Session: budget.Limits{Tokens: 320}}).Check(all, 2, "m", t0)
	var be *agentloop.BudgetError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, budget.LimitSessionTokens, be.Limit)
	assert.Equal(t, "budget: the session's tokens are spent: 330 of 320", be.Message)
}
