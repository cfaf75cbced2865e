package live_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/oklog/ulid/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestManagerEmitsCreatedForEveryWaySessionsAppear(t *testing.T) {
	h := newHarness(t)
	var created []string
	live.Created.On(h.root.Context(), func(ctx context.Context, s *live.Session) error {
		created = append(created, fmt.Sprintf("%s:%d", s.ID(), s.Len()))
		return nil
	})
	s := h.create()
	h.appendAll(s, sessiontest.TurnEvents(t, 0, 1)...)
	_, err := h.m.Fork(h.ctx, s.ID(), 16)
	require.NoError(t, err)
	_, err = h.m.Seed(h.ctx, sessiontest.User("seeded"))
	require.NoError(t, err)
	_, err = h.manager().Open(h.ctx, s.ID())
	require.NoError(t, err)
	assert.Equal(t, []string{"s1:0", "s2:18", "s3:2", "s1:17"}, created)
}

func TestCreatedListenerErrorFailsAndForgetsTheSession(t *testing.T) {
	h := newHarness(t)
	boom := errors.New("boom")
	live.Created.On(h.root.Context(), func(ctx context.Context, s *live.Session) error { return boom })
	_, err := h.m.Create(h.ctx)
	require.ErrorIs(t, err, boom)
	assert.Empty(t, h.m.Live())
}

func TestManagerDefaultIDsAreULIDs(t *testing.T) {
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	m := live.NewManager(root.Context(), memory.New())
	a, err := m.Create(context.Background())
	require.NoError(t, err)
	b, err := m.Create(context.Background())
	require.NoError(t, err)
	_, err = ulid.ParseStrict(a.ID())
	require.NoError(t, err)
	assert.Less(t, a.ID(), b.ID(), "ULIDs sort by creation")
	assert.Equal(t, []*live.Session{a, b}, m.Live())
	got, ok := m.Get(a.ID())
	assert.True(t, ok)
	assert.Same(t, a, got)
	assert.NotNil(t, m.Store())
}

func TestForkCopiesPrefixAndEndsSeed(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	h.appendAll(s, sessiontest.TurnEvents(t, 0, 1)...)
	h.appendAll(s, sessiontest.TurnEvents(t, 17, 2)...)
	f, err := h.m.Fork(h.ctx, s.ID(), 16)
	require.NoError(t, err)
	assert.Equal(t, &session.Parent{ID: s.ID(), Seq: 16, Root: session.RootOf(s.Records()[:17])}, f.Info().Parent, "the header binds the prefix")
	recs := f.Records()
	require.Len(t, recs, 18)
	for i := range 17 {
		assert.True(t, s.Records()[i] == recs[i], "inherited records are shared")
	}
	assert.Equal(t, session.TypeEndSeed, recs[17].Type())
	want, err := session.DeriveMessages(s.Records()[:17])
	require.NoError(t, err)
	assert.Equal(t, want, f.Messages())
	assert.Equal(t, 34, s.Len(), "the parent is unchanged")

	// The fork goes on independently, from seq 18.
	r, err := f.Append(h.ctx, sessiontest.User("new"))
	require.NoError(t, err)
	assert.Equal(t, int64(18), r.Seq())

	// Forking a stored session that is not live works the same.
	m2 := h.manager()
	f2, err := m2.Fork(h.ctx, s.ID(), -1)
	require.NoError(t, err)
	require.Len(t, f2.Records(), 1)
	assert.Equal(t, session.TypeEndSeed, f2.Records()[0].Type())
}

func TestForkRefusesBadBoundaries(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	h.appendAll(s, sessiontest.TurnEvents(t, 0, 1)...)
	for _, at := range []int64{0, 1, 5, 11, 15} {
		_, err := h.m.Fork(h.ctx, s.ID(), at)
		require.ErrorIs(t, err, session.ErrOpenTurn, "at %d", at)
		// Said once, with the boundaries a fork may use instead.
		assert.Equal(t, 1, strings.Count(err.Error(), "fork"), err.Error())
		assert.Contains(t, err.Error(), "the nearest boundaries are -1 (before the turn) and 16 (after it)")
	}
	// A seq the log does not have: said once, with the boundaries.
	_, err := h.m.Fork(h.ctx, s.ID(), 17)
	require.ErrorIs(t, err, session.ErrNotFound)
	assert.Equal(t, "seq 17 is past the end of session "+s.ID()+", whose log has seqs 0..16; a fork can start at a turn boundary: -1 (before the first turn) or 16", err.Error())
	_, err = h.m.Fork(h.ctx, s.ID(), -2)
	require.ErrorIs(t, err, session.ErrNotFound)
	assert.Contains(t, err.Error(), "seq -2 is before the start of session "+s.ID())
	_, err = h.m.Fork(h.ctx, "nope", 0)
	require.ErrorIs(t, err, session.ErrNotFound)
	assert.Equal(t, "session nope not found", err.Error())
	assert.Len(t, h.m.Live(), 1)
}

func TestSeedValidatesLikeAppend(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		name string
		evs  []session.Event
		err  error
	}{
		{"unknown type", []session.Event{{Type: "memo/x"}}, session.ErrUnknownType},
		{"invalid replace", []session.Event{sessiontest.User("a"), sessiontest.Replace(0, 0, "x")}, session.ErrInvalidReplace},
		{"missing step", []session.Event{{Type: session.TypeStepStart, Turn: 1}}, session.ErrInvalidEvent},
		{"open turn", []session.Event{{Type: session.TypeTurnStart, Turn: 1}, sessiontest.User("a")}, session.ErrOpenTurn},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := h.m.Seed(h.ctx, tt.evs...)
			require.ErrorIs(t, err, tt.err)
		})
	}
	assert.Empty(t, h.m.Live())

	s, err := h.m.Seed(h.ctx, sessiontest.TurnEvents(t, 0, 1)...)
	require.NoError(t, err)
	require.Equal(t, 18, s.Len())
	assert.Equal(t, session.TypeEndSeed, s.Records()[17].Type())
	assert.Len(t, s.Messages(), 4)

	// SeedRecords keeps records as they are, and checks their seqs.
	recs := s.Records()[:17]
	s2, err := h.m.SeedRecords(h.ctx, recs)
	require.NoError(t, err)
	assert.True(t, recs[3] == s2.Records()[3])
	_, err = h.m.SeedRecords(h.ctx, recs[1:])
	require.ErrorIs(t, err, session.ErrSeqGap)
}

func TestOpenReturnsTheLiveSession(t *testing.T) {
	h := newHarness(t)
	s := h.create()
	got, err := h.m.Open(h.ctx, s.ID())
	require.NoError(t, err)
	assert.Same(t, s, got)
	_, err = h.m.Open(h.ctx, "nope")
	require.ErrorIs(t, err, session.ErrNotFound)
	_, err = h.m.Open(h.ctx, "../etc/passwd")
	require.ErrorIs(t, err, session.ErrInvalidID)
}

// TestOpenRepairsInterruptedTurn replays testdata/interrupted/*.jsonl: each
// is a log cut by a crash; the golden beside it is the log after Open.
func TestOpenRepairsInterruptedTurns(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "interrupted", "*.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, inputs)
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			dir := t.TempDir()
			data, err := os.ReadFile(in)
			require.NoError(t, err)
			before, _ := session.DecodeBytes(data)
			require.NotNil(t, before)
			id := before.Info.ID
			require.NoError(t, os.WriteFile(filepath.Join(dir, id+".jsonl"), data, 0o644))
			store, err := jsonl.Open(dir)
			require.NoError(t, err)
			t.Cleanup(func() { _ = store.Close() })
			h := newHarnessWith(t, store)
			s, err := h.m.Open(h.ctx, id)
			require.NoError(t, err)
			require.NoError(t, s.Flush(h.ctx))

			got, err := os.ReadFile(filepath.Join(dir, id+".jsonl"))
			require.NoError(t, err)
			golden := filepath.Join("testdata", "interrupted", "golden", filepath.Base(in))
			if *update {
				require.NoError(t, os.MkdirAll(filepath.Dir(golden), 0o755))
				require.NoError(t, os.WriteFile(golden, got, 0o644))
			}
			want, err := os.ReadFile(golden)
			require.NoError(t, err)
			require.Equal(t, string(want), string(got))

			// The repaired log is whole, and a second open changes nothing.
			log, err := session.DecodeBytes(got)
			require.NoError(t, err)
			assert.Equal(t, s.Len(), len(log.Records))
			require.NoError(t, s.Close(h.ctx))
			_, err = h.manager().Open(h.ctx, id)
			require.NoError(t, err)
			again, err := os.ReadFile(filepath.Join(dir, id+".jsonl"))
			require.NoError(t, err)
			require.Equal(t, string(got), string(again))
		})
	}
}

func TestOpenRefusesDamagedLogs(t *testing.T) {
	header := string(session.AppendHeaderLine(nil, session.Info{ID: "s1", Version: session.Version, Created: epoch}))
	first, third := userLine(t, 0, "a"), userLine(t, 2, "c")
	tests := []struct {
		name string
		file string
		err  error
		line int
	}{
		{"corrupt middle line", header + first + "{\"seq\":1,\"ty\n" + third, session.ErrMalformed, 3},
		{"seq gap", header + first + third, session.ErrSeqGap, 3},
		{"wrong version", `{"type":"session","version":7,"id":"s1","created":"2026-11-29T20:21:24Z"}` + "\n", session.ErrVersion, 0},
		{"unknown type", header + `{"seq":0,"type":"memo/x","time":"2026-11-29T20:21:24.000Z","data":{}}` + "\n", session.ErrUnknownType, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(tt.file), 0o644))
			store, err := jsonl.Open(dir)
			require.NoError(t, err)
			h := newHarnessWith(t, store)
			_, err = h.m.Open(h.ctx, "s1")
			require.ErrorIs(t, err, tt.err)
			if tt.line > 0 {
				var ce *session.CorruptError
				require.ErrorAs(t, err, &ce)
				assert.Equal(t, tt.line, ce.Line)
			}
			data, err := os.ReadFile(filepath.Join(dir, "s1.jsonl"))
			require.NoError(t, err)
			assert.Equal(t, tt.file, string(data), "a refused log is left alone")
		})
	}
}

func TestCreateChildNamesTheParentCallAndInheritsNothing(t *testing.T) {
	for _, tt := range []struct {
		name  string
		store func(t *testing.T) session.Store
	}{
		{"memory", func(*testing.T) session.Store { return memory.New() }},
		{"jsonl", func(t *testing.T) session.Store {
			st, err := jsonl.Open(t.TempDir())
			require.NoError(t, err)
			t.Cleanup(func() { _ = st.Close() })
			return st
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessWith(t, tt.store(t))
			p := h.create()
			h.appendAll(p, sessiontest.TurnEvents(t, 0, 1)...)
			c, err := h.m.CreateChild(h.ctx, session.Parent{ID: p.ID(), Seq: 5, Call: "call_1"})
			require.NoError(t, err)
			assert.Zero(t, c.Len())
			log, err := h.store.Load(h.ctx, c.ID())
			require.NoError(t, err)
			assert.Equal(t, &session.Parent{ID: p.ID(), Seq: 5, Call: "call_1"}, log.Info.Parent)
			assert.Empty(t, log.Records)

			_, err = h.m.CreateChild(h.ctx, session.Parent{ID: p.ID(), Seq: 5})
			assert.ErrorIs(t, err, session.ErrInvalidID, "a child names its call")
		})
	}
}

// A session's owner is in its header; a fork and a child session belong
// to their parent's tenant, whether the parent is live or only stored.
func TestForksAndChildrenInheritTheTenant(t *testing.T) {
	for _, live := range []bool{true, false} {
		t.Run(fmt.Sprintf("live=%v", live), func(t *testing.T) {
			h := newHarness(t)
			p, err := h.m.CreateOwned(h.ctx, "acme", "alice")
			require.NoError(t, err)
			h.appendAll(p, sessiontest.TurnEvents(t, 0, 1)...)
			m := h.m
			if !live {
				require.NoError(t, p.Close(h.ctx))
				m = h.manager()
			}
			fork, err := m.ForkBy(h.ctx, p.ID(), 16, "bob")
			require.NoError(t, err)
			child, err := m.CreateChild(h.ctx, session.Parent{ID: p.ID(), Seq: 5, Call: "call_1"})
			require.NoError(t, err)
			for id, want := range map[string][2]string{p.ID(): {"acme", "alice"}, fork.ID(): {"acme", "bob"}, child.ID(): {"acme", "alice"}} {
				log, err := h.store.Load(h.ctx, id)
				require.NoError(t, err)
				assert.Equal(t, want, [2]string{log.Info.Tenant, log.Info.By}, id)
			}
		})
	}
}
