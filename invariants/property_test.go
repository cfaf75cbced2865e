package invariants_test

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// genTurn appends a random turn: one to three steps, each with some text
// chunks and, but for the last, one or two tool calls.
func genTurn(t *rapid.T, b *logBuilder) {
	steps := rapid.IntRange(1, 3).Draw(t, "steps")
	var specs []stepSpec
	for i := 0; i < steps; i++ {
		var s stepSpec
		for k := rapid.IntRange(0, 4).Draw(t, "chunks"); k > 0; k-- {
			s.chunks = append(s.chunks, rapid.StringMatching(`[a-z ]{1,12}`).Draw(t, "chunk"))
		}
		if i < steps-1 {
			for k := rapid.IntRange(1, 2).Draw(t, "calls"); k > 0; k-- {
				s.calls = append(s.calls, toolCallSpec{name: "list_dir", args: `{"path":"` + rapid.StringMatching(`[a-z]{1,8}`).Draw(t, "path") + `"}`, result: rapid.StringMatching(`[a-z\n]{0,40}`).Draw(t, "result")})
			}
		} else if len(s.chunks) == 0 {
			s.chunks = []string{"done"}
		}
		specs = append(specs, s)
	}
	b.turnWith(rapid.StringMatching(`[A-Za-z ?]{1,30}`).Draw(t, "user"), specs...)
}

// genCompaction replaces a tool-balanced range of the surface with a
// summary, between turns.
func genCompaction(t *rapid.T, b *logBuilder) {
	surface := b.fold.Surface()
	if len(surface) < 3 {
		return
	}
	i := rapid.IntRange(0, len(surface)-2).Draw(t, "from")
	j := rapid.IntRange(i+1, len(surface)-1).Draw(t, "to")
	start, end := session.BalancedRange(b.records, surface[i], surface[j])
	pi, pj := slices.Index(surface, start), slices.Index(surface, end)
	if pi < 0 || pj < pi {
		return
	}
	id := fmt.Sprintf("c%d", len(b.records))
	b.add(session.Event{Type: session.TypeCompactionStart, Data: session.Compaction{ID: id}})
	b.add(session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: start, End: end},
		Sources: slices.Clone(surface[pi : pj+1]), Data: session.UserMessage{Content: "summary of " + id}})
	b.add(session.Event{Type: session.TypeCompactionEnd, Data: session.Compaction{ID: id}})
}

// genLog draws a valid log: turns with compactions between them, always
// ending with a turn (so every model-visible event is covered by a later
// request).
func genLog(t *rapid.T) *logBuilder {
	b := newLogBuilder(realisticHeader())
	turns := rapid.IntRange(1, 4).Draw(t, "turns")
	for i := 0; i < turns; i++ {
		genTurn(t, b)
		if i < turns-1 && rapid.Bool().Draw(t, "compact") {
			genCompaction(t, b)
		}
	}
	genTurn(t, b)
	return b
}

// TestPropertyValidLogsAreAccepted: random valid sessions, with tool calls,
// replaces and forks, are accepted by the runtime plugin (every event
// appended through a live session) and by Verify of the stored log.
func TestPropertyValidLogsAreAccepted(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		b := genLog(rt)
		rep, err := invariants.Verify(bytes.NewReader(b.jsonl("gen")))
		require.NoError(rt, err)
		require.Empty(rt, rep.Violations)

		w := newWorld(t)
		w.mount(t, invariants.ModeStrict)
		ctx := context.Background()
		s, err := w.mgr.Create(ctx)
		require.NoError(rt, err)
		for _, sp := range specsOf(b.records) {
			_, err := s.Append(ctx, sp.ev)
			require.NoError(rt, err, "append seq %d %s", sp.seq, sp.ev.Type)
		}

		// Fork at a turn boundary and go on in the fork.
		var ends []int64
		for _, r := range b.records {
			if r.Type() == session.TypeTurnEnd {
				ends = append(ends, r.Seq())
			}
		}
		at := rapid.SampledFrom(ends).Draw(rt, "fork at")
		fork, err := w.mgr.Fork(ctx, s.ID(), at)
		require.NoError(rt, err)
		fb := continueLog(fork.Records(), b.header)
		genTurn(rt, fb)
		for _, sp := range specsOf(fb.records[fork.Len():]) {
			_, err := fork.Append(ctx, sp.ev)
			require.NoError(rt, err, "append to fork seq %d %s", sp.seq, sp.ev.Type)
		}
		rep, err = invariants.Verify(bytes.NewReader(fb.jsonl("fork")))
		require.NoError(rt, err)
		require.Empty(rt, rep.Violations)
	})
}

// continueLog returns a builder that goes on after records.
func continueLog(records []session.Record, h session.Header) *logBuilder {
	b := newLogBuilder(h)
	for _, r := range records {
		if err := b.fold.Add(r); err != nil {
			panic(err)
		}
		switch r.Type() {
		case session.TypeTurnStart:
			b.turn = r.Turn()
		case session.TypeToolCall:
			b.calls++
		case session.TypeRequestHeader:
			b.headed = true
		}
	}
	b.records = slices.Clone(records)
	return b
}

func isVisible(typ string) bool {
	switch typ {
	case session.TypeUserMessage, session.TypeAssistantMessage, session.TypeToolResult:
		return true
	}
	return false
}

// TestPropertyMutationsAreRejected: any single mutation of a model-visible
// event of a stored log — drop, swap with the next model-visible event,
// duplicate, edit — is rejected by Verify, through request-digest or an
// append rule.
func TestPropertyMutationsAreRejected(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		specs := specsOf(genLog(rt).records)
		var visible []int
		for i, s := range specs {
			if isVisible(s.ev.Type) || s.ev.Type == session.TypeRequestHeader {
				visible = append(visible, i)
			}
		}
		i := rapid.SampledFrom(visible).Draw(rt, "event")
		op := rapid.SampledFrom([]string{"drop", "swap", "duplicate", "edit"}).Draw(rt, "mutation")
		if specs[i].ev.Type == session.TypeRequestHeader && op != "drop" && op != "edit" {
			op = "edit"
		}
		switch op {
		case "drop":
			specs = slices.Delete(specs, i, i+1)
		case "duplicate":
			specs = slices.Insert(specs, i+1, specs[i])
		case "swap":
			j := -1
			for k := i + 1; k < len(specs); k++ {
				if isVisible(specs[k].ev.Type) {
					j = k
					break
				}
			}
			if j < 0 {
				op = "edit"
				break
			}
			specs[i], specs[j] = specs[j], specs[i]
		}
		if op == "edit" {
			editContent(&specs[i])
		}
		data, err := jsonlOf("mutated", renumber(specs))
		if err != nil {
			return // the envelope itself no longer holds: refused before any rule
		}
		rep, err := invariants.Verify(bytes.NewReader(data))
		if err != nil {
			return
		}
		if len(rep.Violations) == 0 {
			rt.Fatalf("%s of seq %d (%s) went unnoticed", op, specs[i].seq, specs[i].ev.Type)
		}
	})
}

func editContent(s *spec) {
	switch s.ev.Type {
	case session.TypeUserMessage:
		m := dataOf[session.UserMessage](*s)
		m.Content += "!"
		setData(s, m)
	case session.TypeAssistantMessage:
		m := dataOf[session.AssistantMessage](*s)
		m.Content += "!"
		setData(s, m)
	case session.TypeToolResult:
		m := dataOf[session.ToolResult](*s)
		m.Content += "!"
		setData(s, m)
	case session.TypeRequestHeader:
		m := dataOf[session.RequestHeader](*s)
		m.Header.Model += "-edited"
		setData(s, m)
	}
}

// TestPropertyCheckRequestMatchesFreshFold: for every step of random logs
// (with compactions), a request carrying the fresh fold passes the check,
// and one with any message changed or dropped is refused with
// request-reconstruction at the first divergence.
func TestPropertyCheckRequestMatchesFreshFold(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		b := genLog(rt)
		for _, r := range b.records {
			if r.Type() != session.TypeStepStart {
				continue
			}
			want, err := session.DeriveMessages(b.records[:r.Seq()])
			require.NoError(rt, err)
			again, h, ok, err := session.DeriveRequest(b.records, int(r.Seq()))
			require.NoError(rt, err)
			require.True(rt, ok)
			require.Equal(rt, want, again, "DeriveRequest folds like DeriveMessages")
			require.True(rt, session.HeaderEquals(b.header, h))
			req := &agentloop.Request{Session: "gen", Turn: r.Turn(), Step: r.Step(), StepStart: r.Seq(), Header: b.header, Messages: session.NewMessages(session.CloneMessages(want))}
			if v := invariants.CheckRequest(b.records, req); v != nil {
				rt.Fatalf("step at seq %d: %s", r.Seq(), v)
			}
			if len(want) == 0 {
				continue
			}
			k := rapid.IntRange(0, len(want)-1).Draw(rt, "message")
			bad := session.CloneMessages(want)
			if rapid.Bool().Draw(rt, "drop") {
				bad = slices.Delete(bad, k, k+1)
			} else {
				bad[k].Content += "?"
			}
			req.Messages = session.NewMessages(bad)
			v := invariants.CheckRequest(b.records, req)
			require.NotNil(rt, v, "a changed request at seq %d passed", r.Seq())
			require.Equal(rt, invariants.RuleRequestReconstruction, v.Rule)
			first := 0
			for first < min(len(want), len(bad)) && want[first].Equal(&bad[first]) {
				first++
			}
			require.Equal(rt, first, v.Index, "the violation names the first divergence: %s", v)
		}
	})
}
