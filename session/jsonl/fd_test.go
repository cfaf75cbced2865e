package jsonl_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// openFDs counts this process's open file descriptors on files under
// dir (so that descriptors other goroutines of the test binary open and
// close meanwhile are not counted).
func openFDs(t *testing.T, dir string) int {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	n := 0
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err == nil && strings.HasPrefix(target, dir+string(filepath.Separator)) {
			n++
		}
	}
	return n
}

// Sessions that are loaded and idle hold no file descriptor, whether they
// were only opened or ran a turn first; 10,000 of them hold at most 64.
func TestIdleSessionsHoldNoFileDescriptor(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	const n = 10_000
	turn := sessiontest.Turn(t, 0, 1)
	for i := range n {
		id := fmt.Sprintf("s%05d", i)
		data := session.AppendHeaderLine(nil, info(id))
		for _, r := range turn {
			data = r.AppendLine(data)
		}
		require.NoError(t, os.WriteFile(filepath.Join(dir, id+".jsonl"), data, 0o644))
	}
	store := open(t, dir)
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	m := live.NewManager(root.Context(), store)

	before := openFDs(t, dir)
	sessions := make([]*live.Session, n)
	for i := range n {
		s, err := m.Open(ctx, fmt.Sprintf("s%05d", i))
		require.NoError(t, err)
		sessions[i] = s
	}
	// A tenth of them run a turn (its records, as the loop appends them).
	for i := 0; i < n; i += 10 {
		for _, ev := range turnEvents(2, int64(len(turn))) {
			_, err := sessions[i].Append(ctx, ev)
			require.NoError(t, err)
		}
	}
	assert.LessOrEqual(t, openFDs(t, dir)-before, 64, "descriptors held by %d idle sessions", n)
}

// turnEvents is a turn of one step without tools, numbered turn, whose
// first event is seq base.
func turnEvents(turn int, base int64) []session.Event {
	return []session.Event{
		{Type: session.TypeTurnStart, Turn: turn},
		{Type: session.TypeUserMessage, Turn: turn, Data: session.UserMessage{Content: "hello"}},
		{Type: session.TypeStepStart, Turn: turn, Step: 1},
		{Type: session.TypeAssistantChunk, Turn: turn, Step: 1, Data: session.AssistantChunk{Text: "hi"}},
		{Type: session.TypeAssistantMessage, Turn: turn, Step: 1, Sources: []int64{base + 3}, Data: session.AssistantMessage{Content: "hi"}},
		{Type: session.TypeStepEnd, Turn: turn, Step: 1, Data: session.StepEnd{Finish: session.FinishStop}},
		{Type: session.TypeTurnEnd, Turn: turn, Data: session.TurnEnd{Reason: session.ReasonCompleted}},
	}
}

// A writer holds one descriptor — the data file, which carries the lock —
// from the first append of a turn to its end, and none after.
func TestWriterHoldsOneDescriptorDuringATurn(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := open(t, dir)
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	m := live.NewManager(root.Context(), store)
	s, err := m.Create(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close(ctx) })

	before := openFDs(t, dir)
	evs := turnEvents(1, 0)
	for i, ev := range evs {
		_, err := s.Append(ctx, ev)
		require.NoError(t, err)
		if i < len(evs)-1 {
			require.Equal(t, before+1, openFDs(t, dir), "inside the turn, after %s", ev.Type)
		}
	}
	assert.Equal(t, before, openFDs(t, dir), "after turn/end")
}

// spoil makes the line of seq 1 in the file at path undecodable without
// changing the file's size: a reader that read it again would fail.
func spoil(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	i := bytes.Index(data, []byte(`{"seq":1,`))
	require.GreaterOrEqual(t, i, 0)
	copy(data[i:], `{"sEq":1,`)
	require.NoError(t, os.WriteFile(path, data, 0o644))
}

// The first append after a load reads nothing of the file again, and a
// writer taking the lock again reads only what another appended meanwhile.
func TestAppendReadsOnlyWhatIsNew(t *testing.T) {
	ctx := context.Background()
	turn := sessiontest.Turn(t, 0, 1)
	second := sessiontest.Turn(t, int64(len(turn)), 2)
	third := sessiontest.Turn(t, int64(len(turn)+len(second)), 3)
	tests := []struct {
		name string
		// prepare leaves a's view of s1 at turn, the file spoiled, and
		// returns the seq a appends at.
		prepare func(t *testing.T, dir string, a *jsonl.Store) int64
	}{
		{"after load", func(t *testing.T, dir string, a *jsonl.Store) int64 {
			_, err := a.Load(ctx, "s1")
			require.NoError(t, err)
			spoil(t, filepath.Join(dir, "s1.jsonl"))
			return int64(len(turn))
		}},
		{"after another writer's turn", func(t *testing.T, dir string, a *jsonl.Store) int64 {
			_, err := a.Load(ctx, "s1")
			require.NoError(t, err)
			b := open(t, dir)
			require.NoError(t, b.Append(ctx, "s1", int64(len(turn)), second))
			spoil(t, filepath.Join(dir, "s1.jsonl"))
			require.ErrorIs(t, a.Append(ctx, "s1", int64(len(turn)), third), session.ErrConflict, "a learns what b appended")
			return int64(len(turn) + len(second))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			data := session.AppendHeaderLine(nil, info("s1"))
			for _, r := range turn {
				data = r.AppendLine(data)
			}
			require.NoError(t, os.WriteFile(filepath.Join(dir, "s1.jsonl"), data, 0o644))
			a := open(t, dir)
			at := tt.prepare(t, dir, a)
			recs := sessiontest.Turn(t, at, 9)
			require.NoError(t, a.Append(ctx, "s1", at, recs), "the spoiled line is not read again")
		})
	}
}

// An opened log holds at most twice its size on disk: each record's line
// once (a slice of the file's bytes), a small record, and decoded
// payloads only where folds and rules read them.
func TestOpenedLogHoldsAtMostTwiceItsBytes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	size := writeLongLog(t, dir, "long", 100_000)
	store := open(t, dir)
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	m := live.NewManager(root.Context(), store)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s, err := m.Open(ctx, "long")
	require.NoError(t, err)
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	assert.LessOrEqual(t, held, 2*size, "%d bytes held for a log of %d (%.2f×)", held, size, float64(held)/float64(size))
	runtime.KeepAlive(s)
}
