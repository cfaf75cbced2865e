package invariants_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// passStore is a jsonl store that counts the records its decoder hands
// to a reader in its pass (see session.EachLoader), and the loads made
// without one.
type passStore struct {
	*jsonl.Store
	inPass, plainLoads int
}

func (s *passStore) LoadEach(ctx context.Context, id string, each func(session.Record)) (*session.Log, error) {
	if each == nil {
		s.plainLoads++
		return s.Store.LoadEach(ctx, id, nil)
	}
	return s.Store.LoadEach(ctx, id, func(r session.Record) {
		s.inPass++
		each(r)
	})
}

func (s *passStore) Load(ctx context.Context, id string) (*session.Log, error) {
	return s.LoadEach(ctx, id, nil)
}

// storeLog writes records as the log of a new session in a jsonl store in
// dir, without any check but the store's, and returns its id.
func storeLog(t *testing.T, dir string, records []session.Record) string {
	t.Helper()
	store, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer store.Close()
	const id = "stored"
	ctx := context.Background()
	require.NoError(t, store.Create(ctx, session.Info{ID: id, Version: session.Version, Created: time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)}))
	require.NoError(t, store.Append(ctx, id, 0, records))
	return id
}

// openStored opens session id of the jsonl store in dir with the plugin
// mounted in mode.
func openStored(t *testing.T, dir, id, mode string) (*passStore, *bus.Root, *live.Session, error) {
	t.Helper()
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	_, err := root.Context().Plugin(invariants.New(), &invariants.Config{Mode: mode})
	require.NoError(t, err)
	js, err := jsonl.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.Close() })
	store := &passStore{Store: js}
	s, err := live.NewManager(root.Context(), store).Open(context.Background(), id)
	return store, root, s, err
}

// TestOpenedLogIsCheckedInTheDecodersPass: the plugin checks an opened
// log as the store decodes it, every record once, and keeps the trace it
// built: the session's next append is checked against it.
func TestOpenedLogIsCheckedInTheDecodersPass(t *testing.T) {
	lb := newLogBuilder(realisticHeader())
	for range 3 {
		lb.realisticTurn()
	}
	dir := t.TempDir()
	id := storeLog(t, dir, lb.records)

	store, _, s, err := openStored(t, dir, id, invariants.ModeStrict)
	require.NoError(t, err)
	assert.Equal(t, len(lb.records), store.inPass, "every record checked in the decoder's pass")
	assert.Zero(t, store.plainLoads, "the log is loaded once")

	// The kept trace knows turn 3 is closed and 4 is next.
	_, err = s.Append(context.Background(), turnEnd(3))
	requireViolation(t, err, invariants.RuleTurnNesting)
	appendAll(t, s, turnStart(4), user(4, "and one more"), turnEnd(4))
}

// TestOpenedLogBreakingAnInvariantIsRefused: a stored log that breaks an
// append rule is refused on open in strict mode, and opened with one
// violation reported in warn mode.
func TestOpenedLogBreakingAnInvariantIsRefused(t *testing.T) {
	at := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	var records []session.Record
	for _, ev := range []session.Event{turnStart(1), user(1, "hi"), turnStart(2), turnEnd(2)} {
		r, err := session.NewRecord(int64(len(records)), at, ev)
		require.NoError(t, err)
		records = append(records, r)
	}
	dir := t.TempDir()
	id := storeLog(t, dir, records)

	_, _, _, err := openStored(t, dir, id, invariants.ModeStrict)
	ie := requireViolation(t, err, invariants.RuleTurnNesting)
	assert.Equal(t, int64(2), ie.Seq)

	var reported []*invariants.Violation
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	invariants.ViolationEvent.On(root.Context(), func(_ context.Context, v *invariants.Violation) error {
		reported = append(reported, v)
		return nil
	}, bus.Global)
	_, err = root.Context().Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeWarn})
	require.NoError(t, err)
	js, err := jsonl.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.Close() })
	s, err := live.NewManager(root.Context(), js).Open(context.Background(), id)
	require.NoError(t, err)
	assert.Equal(t, len(records), s.Len())
	require.Len(t, reported, 1)
	assert.Equal(t, invariants.RuleTurnNesting, reported[0].Rule)
	assert.Equal(t, id, reported[0].Session)
}
