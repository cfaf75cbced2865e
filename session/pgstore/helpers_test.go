package pgstore_test

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

var epoch = time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)

var header = session.Header{Provider: "scripted", Model: "m", System: "be brief",
	Tools: []session.ToolSpec{{Name: "list_dir", Description: "list a directory", Parameters: []byte(`{"type":"object"}`)}}}

// turnEvents returns the events of one whole turn that continues records
// the way the agent loop would: a user message, a request with a correct
// digest, a streamed answer. With call, the turn stops after the model's
// tool call has started to run (a turn cut short by a crash).
func turnEvents(records []session.Record, prompt, answer string, call bool) []session.Event {
	turn := 1
	headed := false
	for _, r := range records {
		switch r.Type() {
		case session.TypeTurnStart:
			turn = r.Turn() + 1
		case session.TypeRequestHeader:
			headed = true
		}
	}
	evs := []session.Event{
		{Type: session.TypeTurnStart, Turn: turn},
		{Type: session.TypeUserMessage, Turn: turn, Data: session.UserMessage{Content: prompt}},
	}
	// The request is the fold of the log before step/start.
	prefix := append([]session.Record(nil), records...)
	next := int64(len(records))
	for i := range evs {
		r, err := session.NewRecord(next+int64(i), epoch, evs[i])
		if err != nil {
			panic(err)
		}
		prefix = append(prefix, r)
	}
	msgs, err := session.DeriveMessages(prefix)
	if err != nil {
		panic(err)
	}
	evs = append(evs, session.Event{Type: session.TypeStepStart, Turn: turn, Step: 1})
	if !headed {
		evs = append(evs, session.Event{Type: session.TypeRequestHeader, Turn: turn, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: header}})
	}
	evs = append(evs, session.Event{Type: session.TypeRequestDigest, Turn: turn, Step: 1,
		Data: session.Digest{SHA256: session.RequestDigest(header, msgs), Messages: len(msgs)}})
	chunk := next + int64(len(evs))
	if call {
		id := fmt.Sprintf("call_%d", turn)
		tc := session.ToolCall{ID: id, Name: "list_dir", Arguments: `{"path":"."}`}
		return append(evs,
			session.Event{Type: session.TypeAssistantChunk, Turn: turn, Step: 1, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: id, Name: tc.Name, Arguments: tc.Arguments}}},
			session.Event{Type: session.TypeAssistantMessage, Turn: turn, Step: 1, Sources: []int64{chunk}, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{tc}}},
			session.Event{Type: session.TypeToolCall, Turn: turn, Step: 1, Data: tc},
			session.Event{Type: session.TypeToolStart, Turn: turn, Step: 1, Data: session.ToolStart{ID: id}},
		)
	}
	return append(evs,
		session.Event{Type: session.TypeAssistantChunk, Turn: turn, Step: 1, Data: session.AssistantChunk{Text: answer}},
		session.Event{Type: session.TypeAssistantMessage, Turn: turn, Step: 1, Sources: []int64{chunk}, Data: session.AssistantMessage{Content: answer}},
		session.Event{Type: session.TypeStepEnd, Turn: turn, Step: 1, Data: session.StepEnd{Finish: session.FinishStop, Usage: &session.Usage{Input: 10, Output: 2}}},
		session.Event{Type: session.TypeTurnEnd, Turn: turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}},
	)
}

// turnRecords is turnEvents as records continuing records.
func turnRecords(records []session.Record, prompt, answer string, call bool) []session.Record {
	evs := turnEvents(records, prompt, answer, call)
	out := make([]session.Record, len(evs))
	for i, ev := range evs {
		r, err := session.NewRecord(int64(len(records)+i), epoch.Add(time.Duration(len(records)+i)*time.Millisecond), ev)
		if err != nil {
			panic(err)
		}
		out[i] = r
	}
	return out
}

// appendTurn appends a whole turn to sess.
func appendTurn(ctx context.Context, sess *live.Session, prompt, answer string, call bool) error {
	for _, ev := range turnEvents(sess.Records(), prompt, answer, call) {
		if _, err := sess.Append(ctx, ev); err != nil {
			return err
		}
	}
	return nil
}

// encode renders a log in the JSONL format.
func encode(info session.Info, records []session.Record) []byte {
	out := session.AppendHeaderLine(nil, info)
	for _, r := range records {
		out = r.AppendLine(out)
	}
	return out
}

// requireVerified runs the offline invariants over a stored log.
func requireVerified(t *testing.T, data []byte) *invariants.Report {
	t.Helper()
	rep, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	require.Empty(t, rep.Violations, "violations in\n%s", data)
	return rep
}

// newManagerFor returns a manager with a fixed clock, for child processes.
func newManagerFor(store session.Store) *live.Manager {
	return live.NewManager(bus.New().Context(), store, live.WithClock(func() time.Time { return epoch }))
}
