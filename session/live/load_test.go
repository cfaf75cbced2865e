package live_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// TestLoadingHandsEachRecordOnceThenOpened: a Loading listener reads
// every record of an opened log once, in order, the repair's closers
// last, each the very record the session holds, then its Opened function
// sees the session before Created does; whichever store holds the log.
func TestLoadingHandsEachRecordOnceThenOpened(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "interrupted", "crash-in-tool.jsonl"))
	require.NoError(t, err)
	stored, err := session.DecodeBytes(data)
	require.NoError(t, err)
	id := stored.Info.ID
	for name, open := range map[string]func(t *testing.T) session.Store{
		"jsonl": func(t *testing.T) session.Store {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, id+".jsonl"), data, 0o644))
			s, err := jsonl.Open(dir)
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		},
		"memory": func(t *testing.T) session.Store {
			s := memory.New()
			require.NoError(t, s.Create(context.Background(), stored.Info))
			require.NoError(t, s.Append(context.Background(), id, 0, stored.Records))
			return s
		},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarnessWith(t, open(t))
			var (
				seen  []session.Record
				steps []string
			)
			live.Loading.On(h.root.Context(), func(ctx context.Context, l *live.Load) error {
				assert.Equal(t, id, l.ID())
				l.Each(func(r session.Record) { seen = append(seen, r) })
				l.Opened(func(ctx context.Context, s *live.Session) error {
					steps = append(steps, "opened")
					assert.Equal(t, s.Records(), seen)
					return nil
				})
				return nil
			})
			live.Created.On(h.root.Context(), func(ctx context.Context, s *live.Session) error {
				steps = append(steps, "created")
				return nil
			})
			s, err := h.m.Open(h.ctx, id)
			require.NoError(t, err)
			assert.Equal(t, []string{"opened", "created"}, steps)
			assert.Greater(t, s.Len(), len(stored.Records), "the repair closed the turn")
			assert.Equal(t, s.Records(), seen)
		})
	}
}

// TestLoadOpenedErrorFailsTheOpen: an Opened function's error fails the
// open as a Created listener's does: no session is live, Created is not
// emitted.
func TestLoadOpenedErrorFailsTheOpen(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	h.appendAll(s, session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "hi"}})
	require.NoError(t, s.Close(h.ctx))

	boom := errors.New("boom")
	live.Loading.On(h.root.Context(), func(ctx context.Context, l *live.Load) error {
		l.Opened(func(context.Context, *live.Session) error { return boom })
		return nil
	})
	created := 0
	live.Created.On(h.root.Context(), func(context.Context, *live.Session) error { created++; return nil })
	m := h.manager()
	_, err := m.Open(h.ctx, s.ID())
	require.ErrorIs(t, err, boom)
	assert.Zero(t, created)
	assert.Empty(t, m.Live())
}
