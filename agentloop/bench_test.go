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

// seedEvents returns a log of turns holding about n messages: each turn is
// a user message, an assistant tool call, its result and an answer.
func seedEvents(n int) []session.Event {
	var evs []session.Event
	for turn := 1; len(evs) == 0 || turn <= n/4; turn++ {
		id := fmt.Sprintf("seed_%d", turn)
		args := fmt.Sprintf(`{"expression":"%d*2"}`, turn)
		answer := fmt.Sprintf("The answer to question %d is %d, as the tool computed.", turn, turn*2)
		base := int64(len(evs))
		evs = append(evs,
			session.Event{Type: session.TypeTurnStart, Turn: turn},
			session.Event{Type: session.TypeUserMessage, Turn: turn, Data: session.UserMessage{Content: fmt.Sprintf("What is %d times two? Please use the calculator.", turn)}},
			session.Event{Type: session.TypeStepStart, Turn: turn, Step: 1},
			session.Event{Type: session.TypeAssistantChunk, Turn: turn, Step: 1, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: id, Name: "calc", Arguments: args}}},
			session.Event{Type: session.TypeAssistantMessage, Turn: turn, Step: 1, Sources: []int64{base + 3}, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{{ID: id, Name: "calc", Arguments: args}}}},
			session.Event{Type: session.TypeToolCall, Turn: turn, Step: 1, Data: session.ToolCall{ID: id, Name: "calc", Arguments: args}},
			session.Event{Type: session.TypeToolResult, Turn: turn, Step: 1, Sources: []int64{base + 5}, Data: session.ToolResult{ID: id, Name: "calc", Content: fmt.Sprint(turn * 2)}},
			session.Event{Type: session.TypeStepEnd, Turn: turn, Step: 1, Data: session.StepEnd{Finish: session.FinishToolCalls}},
			session.Event{Type: session.TypeStepStart, Turn: turn, Step: 2},
			session.Event{Type: session.TypeAssistantChunk, Turn: turn, Step: 2, Data: session.AssistantChunk{Text: answer}},
			session.Event{Type: session.TypeAssistantMessage, Turn: turn, Step: 2, Sources: []int64{base + 9}, Data: session.AssistantMessage{Content: answer}},
			session.Event{Type: session.TypeStepEnd, Turn: turn, Step: 2, Data: session.StepEnd{Finish: session.FinishStop}},
			session.Event{Type: session.TypeTurnEnd, Turn: turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}},
		)
	}
	return evs
}

// BenchmarkStep measures the loop's own overhead for one step with a
// tool call — request build and seal, llm/stream dispatch, chunks,
// assistant message, tool dispatch and run, every append — on a session
// of about 1000 messages, with the scripted provider and the in-memory
// store, so no model time is counted. Each iteration is a whole turn of
// one step (max_steps 1), so turn/start, the user message and turn/end
// are included too. The session is replaced every 100 iterations (off
// the clock, with its first turn) to keep it near its size.
func BenchmarkStep(b *testing.B) {
	benchStep(b, nil)
}

// BenchmarkStepWithInvariants is BenchmarkStep with the invariants plugin
// mounted in strict mode: every append and request is checked.
func BenchmarkStepWithInvariants(b *testing.B) {
	benchStep(b, func(c *bus.Context) error {
		_, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
		return err
	})
}

func benchStep(b *testing.B, mount func(*bus.Context) error) {
	for _, n := range []int{1000} {
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			root := bus.New()
			defer root.Dispose()
			c := root.Context()
			// Plugins under measurement (the invariants plugin) mount here.
			if mount != nil {
				require.NoError(b, mount(c))
			}
			mgr := live.NewManager(c, memory.New())
			ctx := context.Background()
			seed := seedEvents(n)
			fresh := func() *live.Session {
				s, err := mgr.Seed(ctx, seed...)
				require.NoError(b, err)
				return s
			}
			prov, err := scripted.New(scripted.Config{Repeat: true, Script: []scripted.Reply{{
				Text:      "Let me compute that.",
				ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "21*2"}}},
			}}})
			require.NoError(b, err)
			a := agentloop.New(c, agentloop.Config{System: "You are a careful assistant.", Model: "scripted", MaxSteps: 1},
				agentloop.WithProvider(prov), agentloop.WithTools(calc.Tool{}))
			// The first step after a session is loaded folds its log once
			// (the loop's view and call ids): the open's cost, not a step's,
			// as in BenchmarkStepLongLog, so it runs off the clock.
			sess := fresh()
			require.Len(b, sess.Messages(), n)
			benchTurn(b, a, sess)
			runtime.GC()
			i := 0
			var cpu time.Duration
			b.ReportAllocs()
			for b.Loop() {
				if i++; i%100 == 0 {
					b.StopTimer()
					_ = sess.Close(ctx)
					sess = fresh()
					benchTurn(b, a, sess)
					runtime.GC() // the old session and the seed are not a step's garbage
					b.StartTimer()
				}
				c0 := cpuNow()
				benchTurn(b, a, sess)
				cpu += cpuNow() - c0
			}
			// The process's CPU time per step: on a shared machine, what
			// compares across benchmarks run one after another.
			b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// benchTurn runs the benchmarks' turn on sess: one step with a tool call,
// ended by max_steps.
func benchTurn(tb testing.TB, a *agentloop.Agent, sess *live.Session) {
	res, err := a.Run(context.Background(), sess, "And what is 21 times two?")
	if err != nil || res.Reason != session.ReasonMaxSteps {
		tb.Fatalf("turn: %v %+v", err, res)
	}
}
