package agentloop_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// benchLoop is one bus with the invariants plugin (strict), a manager on
// the in-memory store, and an agent answering every turn with one tool
// call, as in BenchmarkStep.
type benchLoop struct {
	root *bus.Root
	mgr  *live.Manager
	a    *agentloop.Agent
}

func newBenchLoop(tb testing.TB) *benchLoop {
	tb.Helper()
	root := bus.New()
	l := &benchLoop{root: root}
	// Through l, which a caller that disposes of the loop itself clears,
	// so that a benchmark making many loops does not keep them all.
	tb.Cleanup(func() {
		if l.root != nil {
			_ = l.root.Dispose()
		}
	})
	c := root.Context()
	_, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	require.NoError(tb, err)
	prov, err := scripted.New(scripted.Config{Repeat: true, Script: []scripted.Reply{{
		Text:      "Let me compute that.",
		ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "21*2"}}},
	}}})
	require.NoError(tb, err)
	a := agentloop.New(c, agentloop.Config{System: "You are a careful assistant.", Model: "scripted", MaxSteps: 1},
		agentloop.WithProvider(prov), agentloop.WithTools(calc.Tool{}))
	l.mgr, l.a = live.NewManager(c, memory.New()), a
	return l
}

func (l *benchLoop) turn(tb testing.TB, sess *live.Session) { benchTurn(tb, l.a, sess) }

// compactEvents returns the events of a compaction that replaces the
// surface records surf[:k] (a summary and whole turns, so no call is
// separated from its result) with one summary message.
func compactEvents(surf []int64, k int, id string) []session.Event {
	return []session.Event{
		{Type: session.TypeCompactionStart, Data: session.Compaction{ID: id}},
		{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: surf[0], End: surf[k-1]},
			Sources: append([]int64(nil), surf[:k]...),
			Data:    session.UserMessage{Content: "Summary of the conversation so far: the user asked for products and the calculator answered each."}},
		{Type: session.TypeCompactionEnd, Data: session.Compaction{ID: id}},
	}
}

// longLog returns a valid log of at least n records whose surface is
// about keep messages: seedEvents' turns, compacted with surface replace
// events (a summary and the oldest whole turns replaced by one summary)
// whenever the surface grows 100 past keep.
func longLog(tb testing.TB, n, keep int) []session.Record {
	tb.Helper()
	recs := make([]session.Record, 0, n+64)
	t0 := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	add := func(ev session.Event) {
		r, err := session.NewRecord(int64(len(recs)), t0, ev)
		require.NoError(tb, err)
		recs = append(recs, r)
	}
	var surf []int64
	turn := 0
	for len(recs) < n {
		turn++
		base := int64(len(recs))
		for _, ev := range turnEvents(turn, base) { // 13 events, 4 messages
			add(ev)
		}
		surf = append(surf, base+1, base+4, base+6, base+10)
		if len(surf) >= keep+100 {
			// A summary (when there is one) and whole turns of 4.
			k := len(surf) - keep
			k -= (k - len(surf)%4) % 4
			evs := compactEvents(surf, k, fmt.Sprintf("k%d", turn))
			for _, ev := range evs {
				add(ev)
			}
			summary := int64(len(recs) - 2)
			surf = append([]int64{summary}, surf[k:]...)
		}
	}
	return recs
}

// turnEvents are the events of one of seedEvents' turns, numbered turn,
// starting at seq base, with a call id unique in the session.
func turnEvents(turn int, base int64) []session.Event {
	evs := seedEvents(4)
	id := fmt.Sprintf("long_%d", turn)
	for i := range evs {
		ev := &evs[i]
		ev.Turn = turn
		for j := range ev.Sources {
			ev.Sources[j] += base
		}
		switch d := ev.Data.(type) {
		case session.AssistantChunk:
			if d.ToolCall != nil {
				tc := *d.ToolCall
				tc.ID = id
				d.ToolCall = &tc
				ev.Data = d
			}
		case session.AssistantMessage:
			if len(d.ToolCalls) > 0 {
				d.ToolCalls = []session.ToolCall{{ID: id, Name: d.ToolCalls[0].Name, Arguments: d.ToolCalls[0].Arguments}}
				ev.Data = d
			}
		case session.ToolCall:
			d.ID = id
			ev.Data = d
		case session.ToolResult:
			d.ID = id
			ev.Data = d
		}
	}
	return evs
}

// compactLive compacts sess down to about keep messages, the way
// longLog does, with appends checked by the invariants plugin.
func compactLive(tb testing.TB, sess *live.Session, keep int, id string) {
	tb.Helper()
	f := session.NewFold()
	for _, r := range sess.Records() {
		require.NoError(tb, f.Add(r))
	}
	surf := f.Surface()
	if len(surf) <= keep {
		return
	}
	start, end := session.BalancedRange(sess.Records(), surf[0], surf[len(surf)-keep])
	require.GreaterOrEqual(tb, start, int64(0))
	k := 0
	for k < len(surf) && surf[k] != end {
		k++
	}
	for _, ev := range compactEvents(surf[:k+1], k+1, id) {
		_, err := sess.Append(context.Background(), ev)
		require.NoError(tb, err)
	}
}

// BenchmarkStepLongLog is BenchmarkStepWithInvariants on a session of a
// million events, compacted again and again, whose surface is about 1000
// messages: a step must cost what it costs on a 1000-message log. Every
// 100 steps the session is compacted back to 1000 messages (off the
// clock), as the compaction plugin would. The first step, which folds
// the loaded log once, runs before the clock starts, and so do
// collections of the setup's and the compactions' garbage, which would
// otherwise be marked (a million records' worth) while steps are timed.
func BenchmarkStepLongLog(b *testing.B) {
	const keep = 1000
	l := newBenchLoop(b)
	ctx := context.Background()
	sess, err := l.mgr.SeedRecords(ctx, longLog(b, 1_000_000, keep))
	require.NoError(b, err)
	defer sess.Close(ctx)
	require.InDelta(b, keep, len(sess.Messages()), 100)
	// The first step after a session is loaded folds its log once, for
	// the loop's own fold and call ids: that is the open's cost, not a
	// step's.
	l.turn(b, sess)
	// The setup's garbage is collected now, not by the steps measured.
	runtime.GC()
	i := 0
	var cpu time.Duration
	b.ReportAllocs()
	for b.Loop() {
		if i++; i%100 == 0 {
			b.StopTimer()
			compactLive(b, sess, keep, fmt.Sprintf("bench%d", i))
			runtime.GC() // compactLive's scaffolding is not a step's
			b.StartTimer()
		}
		c0 := cpuNow()
		l.turn(b, sess)
		cpu += cpuNow() - c0
	}
	b.ReportMetric(float64(sess.Len()), "events")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkStepGrowth runs one session of 1000 steps (turns of one step,
// as BenchmarkStep) with the invariants plugin and reports growth-x: the
// mean time of steps 901–1000 over that of steps 1–100. A loop whose
// per-step cost does not grow with the log reports about 1. cpu-growth-x
// is the same ratio of the process's CPU time, which other processes on
// a shared machine do not inflate.
func BenchmarkStepGrowth(b *testing.B) {
	const steps, window = 1000, 100
	ctx := context.Background()
	var early, late, cpuEarly, cpuLate time.Duration
	b.ReportAllocs()
	for b.Loop() {
		b.StopTimer()
		l := newBenchLoop(b)
		sess, err := l.mgr.Create(ctx)
		require.NoError(b, err)
		b.StartTimer()
		for s := 1; s <= steps; s++ {
			t0, c0 := time.Now(), cpuNow()
			l.turn(b, sess)
			d, c := time.Since(t0), cpuNow()-c0
			switch {
			case s <= window:
				early, cpuEarly = early+d, cpuEarly+c
			case s > steps-window:
				late, cpuLate = late+d, cpuLate+c
			}
		}
		b.StopTimer()
		require.NoError(b, sess.Close(ctx))
		require.NoError(b, l.root.Dispose())
		*l = benchLoop{}
		b.StartTimer()
	}
	b.ReportMetric(float64(late)/float64(early), "growth-x")
	b.ReportMetric(float64(cpuLate)/float64(cpuEarly), "cpu-growth-x")
	b.ReportMetric(float64(early.Nanoseconds())/float64(window*b.N), "early-ns/step")
	b.ReportMetric(float64(late.Nanoseconds())/float64(window*b.N), "late-ns/step")
}
