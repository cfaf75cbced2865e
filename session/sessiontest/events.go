package sessiontest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/vigil-run/vigil/session"
)

// What the tests of logs and sessions build their logs from, so each
// states them once.

// Events returns records as the events they were made from, for appending
// them to another log.
func Events(records []session.Record) []session.Event {
	evs := make([]session.Event, len(records))
	for i, r := range records {
		evs[i] = session.Event{Type: r.Type(), Turn: r.Turn(), Step: r.Step(), Sources: r.Sources(), Data: r.Data()}
	}
	return evs
}

// TurnEvents is [Turn] as events, for a log continuing at next.
func TurnEvents(t testing.TB, next int64, turn int) []session.Event {
	return Events(Turn(t, next, turn))
}

// User is a user/message outside any turn.
func User(text string) session.Event {
	return session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: text}}
}

// Assistant is an assistant/message of turn 1, step 1.
func Assistant(content string, calls ...session.ToolCall) session.Event {
	return session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Data: session.AssistantMessage{Content: content, ToolCalls: calls}}
}

// Result is the tool/result of call id (tool "f") in turn 1, step 1.
func Result(id, content string) session.Event {
	return session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Data: session.ToolResult{ID: id, Name: "f", Content: content}}
}

// Replace is a user/message that replaces the surface from start to end,
// citing sources.
func Replace(start, end int64, content string, sources ...int64) session.Event {
	return session.Event{Type: session.TypeUserMessage, Surface: &session.Surface{Op: session.OpReplace, Start: start, End: end}, Sources: sources, Data: session.UserMessage{Content: content}}
}

// Ticker is a deterministic clock and id source: Now advances a
// millisecond from its epoch at every reading, ID returns s1, s2, ….
// It is safe for concurrent use.
type Ticker struct {
	Epoch time.Time

	mu    sync.Mutex
	ticks int
	ids   int
}

// Now returns the next millisecond.
func (k *Ticker) Now() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ticks++
	return k.Epoch.Add(time.Duration(k.ticks) * time.Millisecond)
}

// ID returns the next id.
func (k *Ticker) ID() string {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.ids++
	return fmt.Sprintf("s%d", k.ids)
}

// Appender is what [AppendAll] appends to: a live session, or a test's
// own log.
type Appender interface {
	Append(ctx context.Context, ev session.Event) (session.Record, error)
}

// AppendAll appends evs to s in order and returns their records; an
// append that fails fails t.
func AppendAll(t testing.TB, ctx context.Context, s Appender, evs ...session.Event) []session.Record {
	t.Helper()
	out := make([]session.Record, 0, len(evs))
	for _, ev := range evs {
		r, err := s.Append(ctx, ev)
		if err != nil {
			t.Fatalf("append %s: %v", ev.Type, err)
		}
		out = append(out, r)
	}
	return out
}

// CrashedCall is turn 1 of a session whose process died while its one
// tool call ran: the model asked for call (its request proven by its
// digest), the call started, and nothing more was logged. Opening the
// session repairs it: the call's result is TOOL_OUTCOME_UNKNOWN.
func CrashedCall(prompt string, call session.ToolCall) []session.Event {
	in := func(ev session.Event) session.Event { ev.Turn, ev.Step = 1, 1; return ev }
	h := session.Header{Provider: "scripted", Model: "scripted"}
	asked := []session.Message{{Role: session.RoleUser, Content: prompt}}
	return []session.Event{
		{Type: session.TypeTurnStart, Turn: 1},
		{Type: session.TypeUserMessage, Turn: 1, Data: session.UserMessage{Content: prompt}},
		in(session.Event{Type: session.TypeStepStart}),
		{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: h}},
		in(session.Event{Type: session.TypeRequestDigest, Data: session.Digest{SHA256: session.RequestDigest(h, asked), Messages: 1}}),
		in(session.Event{Type: session.TypeAssistantChunk, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: call.ID, Name: call.Name, Arguments: call.Arguments}}}), // seq 5
		in(session.Event{Type: session.TypeAssistantMessage, Sources: []int64{5}, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{call}}}),
		in(session.Event{Type: session.TypeToolCall, Data: call}), // seq 7
		in(session.Event{Type: session.TypeToolStart, Data: session.ToolStart{ID: call.ID}}),
	}
}
