package invariants_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// interruptedTurn appends a turn cut by a crash while its tool ran, closed
// the way repair closes it (TOOL_OUTCOME_UNKNOWN, turn/end interrupted).
func (b *logBuilder) interruptedTurn(user string) {
	b.turn++
	b.step = 0
	b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{}})
	b.add(session.Event{Type: session.TypeUserMessage, Turn: b.turn, Data: session.UserMessage{Content: user}})
	b.step++
	t, st := b.turn, b.step
	msgs := b.fold.Messages()
	b.add(session.Event{Type: session.TypeStepStart, Turn: t, Step: st, Data: session.StepStart{}})
	if !b.headed {
		b.add(session.Event{Type: session.TypeRequestHeader, Turn: t, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: b.header}})
		b.headed = true
	}
	b.add(session.Event{Type: session.TypeRequestDigest, Turn: t, Step: st, Data: session.Digest{SHA256: session.RequestDigest(b.header, msgs), Messages: len(msgs)}})
	b.calls++
	call := session.ToolCall{ID: "call_crash", Name: "read_file", Arguments: `{"path":"x"}`}
	chunk := b.add(session.Event{Type: session.TypeAssistantChunk, Turn: t, Step: st, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: call.ID, Name: call.Name, Arguments: call.Arguments}}})
	b.add(session.Event{Type: session.TypeAssistantMessage, Turn: t, Step: st, Sources: []int64{chunk.Seq()}, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{call}}})
	b.add(session.Event{Type: session.TypeToolCall, Turn: t, Step: st, Data: call})
	b.add(session.Event{Type: session.TypeToolStart, Turn: t, Step: st, Data: session.ToolStart{ID: call.ID}})
	for _, ev := range session.Closers(b.records) {
		b.add(ev)
	}
}

// budgetTurn appends a turn a limit refused before its first step.
func (b *logBuilder) budgetTurn(user string) {
	b.turn++
	b.step = 0
	b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{}})
	b.add(session.Event{Type: session.TypeUserMessage, Turn: b.turn, Data: session.UserMessage{Content: user}})
	b.add(session.Event{Type: session.TypeTurnEnd, Turn: b.turn, Data: session.TurnEnd{Reason: session.ReasonBudget, Error: "budget: the session's tokens are spent: 10 of 10"}})
}

// continuation appends a turn continuing turn n: no user message of its
// own (unless user is set, a forgery), one step answering in text.
func (b *logBuilder) continuation(n int, user string) {
	b.turn++
	b.step = 0
	b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{Continues: n}})
	if user != "" {
		b.add(session.Event{Type: session.TypeUserMessage, Turn: b.turn, Data: session.UserMessage{Content: user}})
	}
	b.stepWith(stepSpec{chunks: []string{"carrying on"}})
	b.add(session.Event{Type: session.TypeTurnEnd, Turn: b.turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
}

// TestVerifyContinuations: a continuation of the latest turn, which ended
// interrupted or budget, verifies; one of a completed turn, of a turn that is not
// the latest, or holding a user message is a turn-nesting violation.
func TestVerifyContinuations(t *testing.T) {
	cases := []struct {
		name  string
		build func(b *logBuilder)
		want  []string // rules broken, in order; none for a valid log
	}{
		{"of the interrupted latest turn", func(b *logBuilder) {
			b.realisticTurn()
			b.interruptedTurn("go")
			b.continuation(2, "")
		}, nil},
		{"of a budget-ended latest turn", func(b *logBuilder) {
			b.realisticTurn()
			b.budgetTurn("go")
			b.continuation(2, "")
		}, nil},
		{"a budget-ended turn alone", func(b *logBuilder) {
			b.budgetTurn("go")
		}, nil},
		{"of a completed turn", func(b *logBuilder) {
			b.realisticTurn()
			b.continuation(1, "")
		}, []string{invariants.RuleTurnNesting}},
		{"of a turn that is not the latest", func(b *logBuilder) {
			b.interruptedTurn("go")
			b.realisticTurn()
			b.continuation(1, "")
		}, []string{invariants.RuleTurnNesting}},
		{"of a turn that does not exist", func(b *logBuilder) {
			b.continuation(1, "")
		}, []string{invariants.RuleTurnNesting}},
		{"with a user message", func(b *logBuilder) {
			b.interruptedTurn("go")
			b.continuation(1, "a new prompt")
		}, []string{invariants.RuleTurnNesting}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newLogBuilder(realisticHeader())
			tc.build(b)
			rep, err := invariants.Verify(bytes.NewReader(b.jsonl("cont")))
			require.NoError(t, err)
			var rules []string
			for _, v := range rep.Violations {
				rules = append(rules, v.Rule)
			}
			assert.Equal(t, tc.want, rules, "%v", rep.Violations)
		})
	}
}
