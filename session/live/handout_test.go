package live_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// What a session hands out is the caller's: writing it changes nothing
// the session, its fold or a fresh fold of its records sees.
func TestRecordsAndMessagesAreCopies(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	call := session.ToolCall{ID: "c1", Name: "calc", Arguments: `{"x":1}`}
	h.appendAll(s, sessiontest.User("hello"),
		session.Event{Type: session.TypeTurnStart, Turn: 1},
		session.Event{Type: session.TypeStepStart, Turn: 1, Step: 1},
		session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{call}}})
	want := s.Messages()

	recs := s.Records()
	fake, err := session.NewRecord(0, recs[0].Time(), sessiontest.User("forged"))
	require.NoError(t, err)
	recs[0] = fake
	msgs := s.Messages()
	msgs[0].Content = "forged"
	msgs[1].ToolCalls[0].Name = "forged"

	assert.Equal(t, want, s.Messages())
	assert.Equal(t, "hello", mustUser(t, s.Records()[0]).Content)
	fresh, err := session.DeriveMessages(s.Records())
	require.NoError(t, err)
	assert.Equal(t, want, fresh)
	equal, _, _, err := session.MatchRequest(s.Records(), s.Len(), session.NewMessages(want))
	require.NoError(t, err)
	assert.True(t, equal)

	var back []int64
	for r := range s.Backward() {
		back = append(back, r.Seq())
	}
	assert.Equal(t, []int64{3, 2, 1, 0}, back)
}

func mustUser(t *testing.T, r session.Record) session.UserMessage {
	t.Helper()
	m, err := session.DecodeData[session.UserMessage](r)
	require.NoError(t, err)
	return m
}
