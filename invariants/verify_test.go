package invariants_test

import (
	"bytes"
	"errors"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// sampleLog is a valid two-turn log with a tool call and a compaction.
func sampleLog() *logBuilder {
	b := newLogBuilder(realisticHeader())
	b.realisticTurn()
	b.realisticTurn()
	return b
}

func TestVerifyAcceptsValidLog(t *testing.T) {
	b := sampleLog()
	rep, err := invariants.Verify(bytes.NewReader(b.jsonl("valid")))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
	assert.Equal(t, len(b.records), rep.Events)
	assert.Equal(t, "valid", rep.Session)
}

// TestVerifyFindsEachDefect: each append rule and request-digest has a
// defective log that only that rule catches first.
func TestVerifyFindsEachDefect(t *testing.T) {
	cases := []struct {
		name string
		rule string
		edit func([]spec) []spec
	}{
		{"seq gap", invariants.RuleSeqOrder, func(s []spec) []spec {
			for i := 5; i < len(s); i++ {
				s[i].seq++
			}
			return s
		}},
		{"second turn/start inside a turn", invariants.RuleTurnNesting, func(s []spec) []spec {
			i := find(s, session.TypeTurnStart, 1)
			s = slices.Insert(s, 2, s[i])
			s[2].ev.Turn = 2
			return renumber(s)
		}},
		{"turn/end while a step is open", invariants.RuleTurnNesting, func(s []spec) []spec {
			i := find(s, session.TypeTurnEnd, 0)
			j := find(s, session.TypeStepEnd, 1)
			s[i], s[j] = s[j], s[i]
			return renumber(s)
		}},
		{"step numbered out of order", invariants.RuleStepNesting, func(s []spec) []spec {
			i := find(s, session.TypeStepStart, 1)
			for k := i; k < len(s) && s[k].ev.Turn == 1; k++ {
				if s[k].ev.Step == 2 {
					s[k].ev.Step = 3
				}
			}
			return s
		}},
		{"chunk naming another step", invariants.RuleStepScope, func(s []spec) []spec {
			i := find(s, session.TypeAssistantChunk, 0)
			s[i].ev.Step = 2
			return s
		}},
		{"tool result answering no call", invariants.RuleToolPairing, func(s []spec) []spec {
			i := find(s, session.TypeToolResult, 0)
			r := dataOf[session.ToolResult](s[i])
			r.ID = "call_unknown"
			setData(&s[i], r)
			return s
		}},
		{"duplicate tool call id", invariants.RuleToolPairing, func(s []spec) []spec {
			i := find(s, session.TypeToolCall, 1)
			c := dataOf[session.ToolCall](s[i])
			c.ID = "call_1"
			setData(&s[i], c)
			return s
		}},
		{"request header outside a turn", invariants.RuleTurnEnclosure, func(s []spec) []spec {
			h := s[find(s, session.TypeRequestHeader, 0)]
			s = slices.Delete(s, find(s, session.TypeRequestHeader, 0), find(s, session.TypeRequestHeader, 0)+1)
			s = slices.Insert(s, 0, h)
			return renumber(s)
		}},
		{"replace not citing what it shadows", invariants.RuleSurfaceReplace, func(s []spec) []spec {
			u := find(s, session.TypeUserMessage, 0)
			r := find(s, session.TypeToolResult, 0)
			sum := spec{seq: -1, ev: session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: s[u].seq, End: s[r].seq}, Sources: []int64{s[u].seq}}}
			setData(&sum, session.UserMessage{Content: "summary"})
			at := find(s, session.TypeTurnEnd, 0) + 1
			s = slices.Insert(s, at, sum)
			s[at].seq = s[at-1].seq + 1
			for k := at + 1; k < len(s); k++ {
				s[k].seq++
			}
			return renumber(s)
		}},
		{"assistant message differing from its chunks", invariants.RuleAssistantAssembly, func(s []spec) []spec {
			i := find(s, session.TypeAssistantMessage, 3)
			m := dataOf[session.AssistantMessage](s[i])
			m.Content += " (edited)"
			setData(&s[i], m)
			return s
		}},
		{"dropped final assistant message", invariants.RuleAssistantAssembly, func(s []spec) []spec {
			i := find(s, session.TypeAssistantMessage, 3)
			return renumber(slices.Delete(s, i, i+1))
		}},
		{"user message edited after the request", invariants.RuleRequestDigest, func(s []spec) []spec {
			i := find(s, session.TypeUserMessage, 0)
			setData(&s[i], session.UserMessage{Content: "something the model never saw"})
			return s
		}},
		{"system prompt edited after the request", invariants.RuleRequestDigest, func(s []spec) []spec {
			i := find(s, session.TypeRequestHeader, 0)
			h := dataOf[session.RequestHeader](s[i])
			h.Header.System = "You are a different assistant."
			setData(&s[i], h)
			return s
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			specs := tc.edit(specsOf(sampleLog().records))
			data, err := jsonlOf("defective", specs)
			require.NoError(t, err)
			rep, err := invariants.Verify(bytes.NewReader(data))
			require.NoError(t, err)
			require.NotEmpty(t, rep.Violations, "the defect went unnoticed")
			assert.Equal(t, tc.rule, rep.Violations[0].Rule, "first violation: %s", rep.Violations[0].String())
			assert.Equal(t, "defective", rep.Violations[0].Session)
		})
	}
}

func TestVerifyNamesTheCorruptLine(t *testing.T) {
	data := sampleLog().jsonl("corrupt")
	lines := bytes.SplitAfter(data, []byte("\n"))
	lines[4] = []byte("{not json\n")
	_, err := invariants.Verify(bytes.NewReader(bytes.Join(lines, nil)))
	var ce *session.CorruptError
	require.True(t, errors.As(err, &ce), "got %v", err)
	assert.Equal(t, 5, ce.Line)
}

func TestVerifyReportsTornTail(t *testing.T) {
	data := sampleLog().jsonl("torn")
	_, err := invariants.Verify(bytes.NewReader(data[:len(data)-10]))
	require.ErrorIs(t, err, session.ErrTornTail)
	var ce *session.CorruptError
	require.ErrorAs(t, err, &ce)
}

// TestVerifyNamesTheRuleOfALineTheDecoderRefuses: a line that breaks an
// append rule on its own never becomes a record (the decoder refuses it),
// yet verify reports the rule, at the line's seq, as for every other rule,
// and judges the following lines against the log as it stands.
func TestVerifyNamesTheRuleOfALineTheDecoderRefuses(t *testing.T) {
	cases := []struct {
		name string
		typ  string // the first line of this type is edited
		old  string // a regular expression
		new  string
		rule string
	}{
		{"request/header outside a turn", session.TypeRequestHeader, `,"turn":1`, ``, invariants.RuleTurnEnclosure},
		{"request/digest outside a turn", session.TypeRequestDigest, `,"turn":1,"step":1`, ``, invariants.RuleTurnEnclosure},
		{"request/digest outside a step", session.TypeRequestDigest, `,"step":1`, ``, invariants.RuleStepScope},
		{"chunk outside a step", session.TypeAssistantChunk, `,"step":1`, ``, invariants.RuleStepScope},
		{"turn/start without a turn", session.TypeTurnStart, `,"turn":1`, ``, invariants.RuleTurnNesting},
		{"step/start without a step", session.TypeStepStart, `,"step":1`, ``, invariants.RuleStepNesting},
		{"tool/call without an id", session.TypeToolCall, `"data":\{"id":"[^"]+"`, `"data":{"id":""`, invariants.RuleToolPairing},
		{"replace of seqs after the event", session.TypeUserMessage, `,"data"`, `,"surface":{"op":"replace","start":100,"end":101},"data"`, invariants.RuleSurfaceReplace},
		{"surface op on a chunk", session.TypeAssistantChunk, `,"data"`, `,"surface":{"op":"replace","start":0,"end":0},"data"`, invariants.RuleSurfaceReplace},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lines := bytes.SplitAfter(sampleLog().jsonl("refused"), []byte("\n"))
			seq := int64(-1)
			for i, l := range lines[1:] {
				if bytes.Contains(l, []byte(`"type":"`+c.typ+`"`)) {
					re := regexp.MustCompile(c.old)
					require.True(t, re.Match(l), "line %s", l)
					lines[i+1] = re.ReplaceAll(l, []byte(c.new))
					seq = int64(i)
					break
				}
			}
			require.GreaterOrEqual(t, seq, int64(0))
			rep, err := invariants.Verify(bytes.NewReader(bytes.Join(lines, nil)))
			require.NoError(t, err, "the line is a violation, not an unreadable log")
			require.NotEmpty(t, rep.Violations)
			v := rep.Violations[0]
			assert.Equal(t, c.rule, v.Rule, "%v", rep.Violations)
			assert.Equal(t, seq, v.Seq)
			assert.Equal(t, "refused", v.Session)
			assert.NotContains(t, v.Message, "seq ", "the seq is the violation's, not repeated in its message")
			assert.Equal(t, len(lines)-2, rep.Events, "every line counts")
			for _, v := range rep.Violations {
				assert.NotEqual(t, invariants.RuleSeqOrder, v.Rule, "the refused line keeps its seq: %v", v)
			}
		})
	}
}

// oneshot appends a one-shot over sources as agentloop.Complete logs it:
// request/oneshot with the digest of the request re-derived from the log,
// then its usage.
func (b *logBuilder) oneshot(sources []int64, instruction string, h session.Header) {
	msgs, err := session.OneshotMessages(b.records, sources, instruction)
	if err != nil {
		panic(err)
	}
	o := session.Oneshot{Purpose: "compaction", SHA256: session.RequestDigest(h, msgs), Messages: len(msgs), Instruction: instruction, Header: &h}
	r := b.add(session.Event{Type: session.TypeRequestOneshot, Sources: sources, Data: o})
	b.add(session.Event{Type: session.TypeRequestUsage, Sources: []int64{r.Seq()}, Data: session.Usage{Input: 50, Output: 5}})
}

// TestVerifyRederivesOneShots: a one-shot's digest is recomputed from the
// log — its logged header, the projections of its sources, its logged
// instruction — so an edit of any of them is a request-digest violation at
// the one-shot; a one-shot logged before one-shots carried their
// instruction is not re-derivable, and is reported as such, not as a
// violation.
func TestVerifyRederivesOneShots(t *testing.T) {
	h := session.Header{Provider: "scripted", Model: "small"}
	build := func() (*logBuilder, int64) {
		b := sampleLog()
		var surface []int64
		for _, r := range b.records {
			if _, ok := session.Project(r); ok && r.Turn() == 1 {
				surface = append(surface, r.Seq())
			}
		}
		b.oneshot(surface, "Summarize the conversation above.", h)
		return b, int64(len(b.records) - 2)
	}
	b, at := build()
	rep, err := invariants.Verify(bytes.NewReader(b.jsonl("oneshot")))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
	assert.Empty(t, rep.OneshotsUnderived)

	for _, tc := range []struct {
		name string
		edit func(o *session.Oneshot, sources []int64) []int64
	}{
		{"instruction", func(o *session.Oneshot, s []int64) []int64 { o.Instruction = forgedText; return s }},
		{"header", func(o *session.Oneshot, s []int64) []int64 { o.Header.Model = "large"; return s }},
		{"sources", func(o *session.Oneshot, s []int64) []int64 { return s[1:] }},
		{"sources' order", func(o *session.Oneshot, s []int64) []int64 { s[0], s[1] = s[1], s[0]; return s }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, at := build()
			specs := specsOf(b.records)
			o := dataOf[session.Oneshot](specs[at])
			specs[at].ev.Sources = tc.edit(&o, specs[at].ev.Sources)
			setData(&specs[at], o)
			data, err := jsonlOf("edited", specs)
			require.NoError(t, err)
			rep, err := invariants.Verify(bytes.NewReader(data))
			require.NoError(t, err)
			require.Len(t, rep.Violations, 1, "%v", rep.Violations)
			assert.Equal(t, invariants.RuleRequestDigest, rep.Violations[0].Rule)
			assert.Equal(t, at, rep.Violations[0].Seq)
		})
	}

	t.Run("a one-shot of an older build", func(t *testing.T) {
		specs := specsOf(b.records)
		o := dataOf[session.Oneshot](specs[at])
		setData(&specs[at], session.Oneshot{Purpose: o.Purpose, SHA256: o.SHA256, Messages: o.Messages})
		data, err := jsonlOf("legacy", specs)
		require.NoError(t, err)
		rep, err := invariants.Verify(bytes.NewReader(data))
		require.NoError(t, err)
		assert.Empty(t, rep.Violations)
		assert.Equal(t, []int64{at}, rep.OneshotsUnderived)
	})
}

const forgedText = "FORGED: ignore the log"
