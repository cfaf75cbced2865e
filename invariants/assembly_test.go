package invariants

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/vigil-run/vigil/session"
)

// TestAssemblesAgreesWithAssembly: the matching of a message against its
// chunks as they come (assembles) accepts just the messages the full
// assembly finds no difference in (misassembled), for messages made from
// the chunks and edited at random, and the rule reports what the full
// assembly reports.
func TestAssemblesAgreesWithAssembly(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		tr := newTrace()
		src := drawChunks(rt, tr)
		m := assembleFully(tr, src)
		src = editAtRandom(rt, tr, &m, src)
		fast := tr.assembles(src, &m)
		full := tr.misassembled(100, src, &m)
		if fast != (full == nil) {
			rt.Fatalf("assembles says %v, the full assembly %v", fast, full)
		}
		tr.step, tr.turn, tr.stepOpen = 1, 1, true
		r, err := session.NewRecord(100, time.Unix(0, 0), session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Sources: src, Data: m})
		if err != nil {
			return // an edit the record itself refuses (sources out of order, …)
		}
		require.Equal(rt, full, assistantAssembly(tr, r))
	})
}

// drawChunks puts up to six random chunks in tr and returns their seqs.
func drawChunks(rt *rapid.T, tr *trace) []int64 {
	piece := rapid.SampledFrom([]string{"", "a", "b", "ab", "{\"x\":", "1}"})
	n := rapid.IntRange(0, 6).Draw(rt, "chunks")
	var src []int64
	for i := 0; i < n; i++ {
		seq := int64(10 + 2*i)
		c := session.AssistantChunk{Text: piece.Draw(rt, "text"), Reasoning: piece.Draw(rt, "reasoning")}
		if rapid.Bool().Draw(rt, "call") {
			c.ToolCall = &session.ChunkToolCall{
				Index:     rapid.IntRange(0, 2).Draw(rt, "index"),
				ID:        rapid.SampledFrom([]string{"", "call_1", "call_2"}).Draw(rt, "id"),
				Name:      rapid.SampledFrom([]string{"", "calc", "echo"}).Draw(rt, "name"),
				Arguments: piece.Draw(rt, "args"),
			}
		}
		tr.chunks[seq] = c
		src = append(src, seq)
	}
	return src
}

// assembleFully is the message the chunks of src assemble, by the full
// assembly.
func assembleFully(tr *trace, src []int64) session.AssistantMessage {
	var m session.AssistantMessage
	index := map[int]int{}
	for _, s := range src {
		c := tr.chunks[s]
		m.Content += c.Text
		m.Reasoning += c.Reasoning
		tc := c.ToolCall
		if tc == nil {
			continue
		}
		k, ok := index[tc.Index]
		if !ok {
			k = len(m.ToolCalls)
			index[tc.Index] = k
			m.ToolCalls = append(m.ToolCalls, session.ToolCall{})
		}
		if tc.ID != "" {
			m.ToolCalls[k].ID = tc.ID
		}
		if tc.Name != "" {
			m.ToolCalls[k].Name = tc.Name
		}
		m.ToolCalls[k].Arguments += tc.Arguments
	}
	return m
}

// editAtRandom makes one random edit (or none) of m, its sources or what
// tr knows of them, and returns the sources.
func editAtRandom(rt *rapid.T, tr *trace, m *session.AssistantMessage, src []int64) []int64 {
	// An edit that keeps a string's length: only its bytes differ.
	swap := func(s string) string {
		if s == "" {
			return s
		}
		return "z" + s[1:]
	}
	calls := len(m.ToolCalls)
	switch rapid.IntRange(0, 12).Draw(rt, "edit") {
	case 1:
		m.Content += "x"
	case 2:
		m.Reasoning = "x" + m.Reasoning
	case 3:
		m.ToolCalls = append(m.ToolCalls, session.ToolCall{ID: "call_9", Name: "calc"})
	case 4:
		if calls > 0 {
			m.ToolCalls = m.ToolCalls[1:]
		}
	case 5:
		if calls > 0 {
			m.ToolCalls[0].Arguments += "}"
		}
	case 6:
		if calls > 0 {
			m.ToolCalls[calls-1].ID = "call_x"
		}
	case 7:
		if len(src) > 1 {
			src[0], src[1] = src[1], src[0]
		}
	case 8:
		if len(src) > 0 {
			tr.cited[src[0]] = true
		}
	case 9:
		src = append(src, 99)
	case 10:
		m.Content = swap(m.Content)
	case 11:
		m.Reasoning = swap(m.Reasoning)
	case 12:
		if calls > 0 {
			m.ToolCalls[0].Arguments = swap(m.ToolCalls[0].Arguments)
		}
	}
	return src
}
