package scripted

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

func wholeSize(req *agentloop.Request) int {
	n := len(req.Header.System)
	for _, m := range req.Messages {
		n += len(m.Content)
		for _, c := range m.ToolCalls {
			n += len(c.Arguments)
		}
	}
	return n
}

// The size a step's estimate is made from is the whole request's, whether
// the messages array grew in place, was replaced, or belongs to another
// session.
func TestInputSizeIsTheWholeRequests(t *testing.T) {
	var s inputSizes
	grown := make([]session.Message, 0, 64)
	for i := range 20 {
		grown = append(grown, session.Message{Role: session.RoleUser, Content: fmt.Sprintf("question %d", i)},
			session.Message{Role: session.RoleAssistant, ToolCalls: []session.ToolCall{{ID: "c", Name: "calc", Arguments: fmt.Sprintf(`{"n":%d}`, i)}}})
		req := &agentloop.Request{Session: "a", Header: session.Header{System: "sys"}, Messages: grown}
		assert.Equal(t, wholeSize(req), s.size(req), "grown to %d", len(grown))
	}
	replaced := append([]session.Message{{Role: session.RoleUser, Content: "a summary of it all"}}, grown[30:]...)
	for _, req := range []*agentloop.Request{
		{Session: "a", Messages: replaced},
		{Session: "a", Messages: grown[:10]},
		{Session: "b", Messages: grown[:5]},
		{Session: "a", Messages: nil},
		{Messages: grown},
	} {
		assert.Equal(t, wholeSize(req), s.size(req))
	}
}
