package invariants_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// unknownResult is the seq of the TOOL_OUTCOME_UNKNOWN result of the
// builder's interrupted turn, and knownResult a known one's.
func resultSeq(t *testing.T, b *logBuilder, id string) int64 {
	t.Helper()
	for _, r := range b.records {
		if r.Type() == session.TypeToolResult {
			if p, err := session.DecodeData[session.ToolResult](r); err == nil && p.ID == id {
				return r.Seq()
			}
		}
	}
	t.Fatalf("no result for %q", id)
	return -1
}

func (b *logBuilder) reconcile(id string, sources ...int64) {
	b.add(session.Event{Type: session.TypeToolReconcile, Sources: sources, Data: session.ToolReconcile{ID: id, Content: "refunded", By: "alice"}})
}

// retryTurn starts a continuation of turn n that retries call id and
// reconciles it (when reconcile is set), then answers in one step.
func (b *logBuilder) retryTurn(t *testing.T, n int, id string, reconcile bool) {
	b.turn++
	b.step = 0
	b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{Continues: n}})
	res := resultSeq(t, b, id)
	retry := b.add(session.Event{Type: session.TypeToolRetry, Turn: b.turn, Sources: []int64{res}, Data: session.ToolRetry{ID: id}})
	if reconcile {
		b.add(session.Event{Type: session.TypeToolReconcile, Turn: b.turn, Sources: []int64{res, retry.Seq()}, Data: session.ToolReconcile{ID: id, Name: "read_file", Content: "again"}})
	}
	b.stepWith(stepSpec{chunks: []string{"carrying on"}})
	b.add(session.Event{Type: session.TypeTurnEnd, Turn: b.turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
}

// TestVerifyReconciliations: one reconcile per unknown call, after it,
// citing it, verifies, a person's between turns and the continuation's
// after its retry; every other is a tool-reconcile (or tool-retry)
// violation. A reconcile's message is part of the fold later requests
// are checked against.
func TestVerifyReconciliations(t *testing.T) {
	const crash = "call_crash"
	cases := []struct {
		name  string
		build func(t *testing.T, b *logBuilder)
		want  []string
	}{
		{"a person's, between turns", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.reconcile(crash, resultSeq(t, b, crash))
			b.realisticTurn()
		}, nil},
		{"the continuation's, after its retry", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.retryTurn(t, 1, crash, true)
		}, nil},
		{"a person's after a retry that crashed", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.turn++
			b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{Continues: 1}})
			b.add(session.Event{Type: session.TypeToolRetry, Turn: b.turn, Sources: []int64{resultSeq(t, b, crash)}, Data: session.ToolRetry{ID: crash}})
			for _, ev := range session.Closers(b.records) {
				b.add(ev)
			}
			b.reconcile(crash, resultSeq(t, b, crash))
		}, nil},
		{"a second one", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.reconcile(crash, resultSeq(t, b, crash))
			b.reconcile(crash, resultSeq(t, b, crash))
		}, []string{invariants.RuleToolReconcile}},
		{"of a known result", func(t *testing.T, b *logBuilder) {
			b.realisticTurn()
			b.reconcile("call_1", resultSeq(t, b, "call_1"))
		}, []string{invariants.RuleToolReconcile}},
		{"of no call", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.reconcile("call_none", resultSeq(t, b, crash))
		}, []string{invariants.RuleToolReconcile}},
		{"citing something else", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.reconcile(crash, 0)
		}, []string{invariants.RuleToolReconcile}},
		{"citing nothing", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.reconcile(crash)
		}, []string{invariants.RuleToolReconcile}},
		{"inside a turn", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.turn++
			b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{}})
			b.reconcile(crash, resultSeq(t, b, crash))
		}, []string{invariants.RuleToolReconcile}},
		{"the continuation's without a retry", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.turn++
			b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{Continues: 1}})
			b.add(session.Event{Type: session.TypeToolReconcile, Turn: b.turn, Sources: []int64{resultSeq(t, b, crash)}, Data: session.ToolReconcile{ID: crash, Content: "x"}})
		}, []string{invariants.RuleToolReconcile}},
		{"a retry of a reconciled call", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.reconcile(crash, resultSeq(t, b, crash))
			b.retryTurn(t, 1, crash, false)
		}, []string{invariants.RuleToolRetry}},
		{"a retry of a known result", func(t *testing.T, b *logBuilder) {
			b.realisticTurn()
			b.interruptedTurn("go")
			b.retryTurn(t, 2, "call_1", false)
		}, []string{invariants.RuleToolRetry}},
		{"a retry in a turn that is no continuation", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.turn++
			b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{}})
			b.add(session.Event{Type: session.TypeToolRetry, Turn: b.turn, Sources: []int64{resultSeq(t, b, crash)}, Data: session.ToolRetry{ID: crash}})
		}, []string{invariants.RuleToolRetry}},
		{"a retry after the first step", func(t *testing.T, b *logBuilder) {
			b.interruptedTurn("go")
			b.turn++
			b.step = 0
			b.add(session.Event{Type: session.TypeTurnStart, Turn: b.turn, Data: session.TurnStart{Continues: 1}})
			b.stepWith(stepSpec{chunks: []string{"hm"}})
			b.add(session.Event{Type: session.TypeToolRetry, Turn: b.turn, Sources: []int64{resultSeq(t, b, crash)}, Data: session.ToolRetry{ID: crash}})
		}, []string{invariants.RuleToolRetry}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := newLogBuilder(realisticHeader())
			tc.build(t, b)
			rep, err := invariants.Verify(bytes.NewReader(b.jsonl("recon")))
			require.NoError(t, err)
			var rules []string
			for _, v := range rep.Violations {
				rules = append(rules, v.Rule)
			}
			assert.Equal(t, tc.want, rules, "%v", rep.Violations)
		})
	}
}

// A record the decoder refuses for its scope is named by its own rule.
func TestVerifyNamesAMisscopedReconcileByItsRule(t *testing.T) {
	b := newLogBuilder(realisticHeader())
	b.interruptedTurn("go")
	data := b.jsonl("recon")
	res := resultSeq(t, b, "call_crash")
	for _, tc := range []struct{ line, rule string }{
		{`{"seq":%d,"type":"tool/retry","time":"2026-11-29T20:00:00.000Z","sources":[%d],"data":{"id":"call_crash"}}`, invariants.RuleToolRetry},
		{`{"seq":%d,"type":"tool/reconcile","time":"2026-11-29T20:00:00.000Z","turn":1,"step":1,"sources":[%d],"data":{"id":"call_crash"}}`, invariants.RuleToolReconcile},
	} {
		log := append(bytes.Clone(data), fmt.Sprintf(tc.line, len(b.records), res)+"\n"...)
		rep, err := invariants.Verify(bytes.NewReader(log))
		require.NoError(t, err)
		require.Len(t, rep.Violations, 1, "%v", rep.Violations)
		assert.Equal(t, tc.rule, rep.Violations[0].Rule, rep.Violations[0].Message)
	}
}
