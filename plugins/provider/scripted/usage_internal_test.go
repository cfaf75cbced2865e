package scripted

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

func wholeSize(req *agentloop.Request) int {
	n := len(req.Header.System)
	for _, m := range req.Messages.All() {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Arguments)
		}
	}
	return n
}

// folding feeds events to a fold, as the loop's own fold is fed.
type folding struct {
	t    *testing.T
	fold *session.Fold
	seq  int64
}

func (f *folding) add(ev session.Event) {
	f.t.Helper()
	r, err := session.NewRecord(f.seq, time.Unix(1_700_000_000, 0), ev)
	require.NoError(f.t, err)
	require.NoError(f.t, f.fold.Add(r))
	f.seq++
}

// The size a step's estimate is made from is the whole request's, whether
// the messages array grew in place, was replaced, or belongs to another
// session.
func TestInputSizeIsTheWholeRequests(t *testing.T) {
	var s inputSizes
	f := &folding{t: t, fold: session.NewFold()}
	var all []session.Message
	for i := range 20 {
		f.add(session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: fmt.Sprintf("question %d", i)}})
		f.add(session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{
			ToolCalls: []session.ToolCall{{ID: fmt.Sprintf("c%d", i), Name: "calc", Arguments: fmt.Sprintf(`{"n":%d}`, i)}}}})
		req := &agentloop.Request{Session: "a", Header: session.Header{System: "sys"}, Messages: f.fold.View()}
		assert.Equal(t, wholeSize(req), s.size(req), "grown to %d", req.Messages.Len())
		all = req.Messages.Clone()
	}
	grown := f.fold.View()
	f.add(session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: 0, End: 29},
		Sources: seqs(0, 29), Data: session.UserMessage{Content: "a summary of it all"}})
	for _, req := range []*agentloop.Request{
		{Session: "a", Messages: f.fold.View()},
		{Session: "a", Messages: grown},
		{Session: "a", Messages: session.NewMessages(all[:10])},
		{Session: "b", Messages: session.NewMessages(all[:5])},
		{Session: "a"},
		{Messages: grown},
	} {
		assert.Equal(t, wholeSize(req), s.size(req))
	}
}

func seqs(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s++ {
		out = append(out, s)
	}
	return out
}
