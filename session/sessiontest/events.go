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
