package jsonl_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestLedgerConformance(t *testing.T) {
	sessiontest.RunLedger(t, func(t *testing.T) func(t *testing.T) session.Store {
		dir := t.TempDir()
		return func(t *testing.T) session.Store { return open(t, dir) }
	})
}

// A crash in the middle of a Record leaves a torn last line: it is never
// read, and the next Record cuts it off before it appends, so the file
// stays a header and whole entries.
func TestLedgerTornLastLine(t *testing.T) {
	ctx := context.Background()
	s, dir := oneEntry(t, "one")
	intact, err := os.ReadFile(s.LedgerPath("s1"))
	require.NoError(t, err)

	for _, torn := range []string{`{"key":"s1/call_2","value":"dH`, `{"key":"s1/call_2","value":"dHdv"}`, `{`} {
		require.NoError(t, os.WriteFile(s.LedgerPath("s1"), append(append([]byte{}, intact...), torn...), 0o644))
		other := open(t, dir) // another process, after the crash
		_, ok, err := other.Lookup(ctx, "s1", "s1/call_2")
		require.NoError(t, err)
		assert.False(t, ok, "a torn line is not an entry: %s", torn)
		v, ok, err := other.Lookup(ctx, "s1", "s1/call_1")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, "one", string(v))

		stored, err := other.Record(ctx, "s1", "s1/call_2", []byte("two"))
		require.NoError(t, err)
		assert.Equal(t, "two", string(stored))
		data, err := os.ReadFile(s.LedgerPath("s1"))
		require.NoError(t, err)
		assert.Equal(t, string(intact)+`{"key":"s1/call_2","value":"dHdv"}`+"\n", string(data), "the torn line is cut off")
	}
}

// A ledger left behind by a session deleted in a crash (its log gone, its
// ledger not yet) is not read by a new session of the same id: it is
// bound to the log it was written for.
func TestLedgerOfAnEarlierSessionOfTheIDIsNotRead(t *testing.T) {
	ctx := context.Background()
	s, dir := oneEntry(t, "old")
	require.NoError(t, s.Close())
	require.NoError(t, os.Remove(s.Path("s1"))) // the deletion crashed here

	s = open(t, dir)
	later := info("s1")
	later.Created = later.Created.Add(time.Hour)
	require.NoError(t, s.Create(ctx, later))
	_, ok, err := s.Lookup(ctx, "s1", "s1/call_1")
	require.NoError(t, err)
	assert.False(t, ok)
	v, err := s.Record(ctx, "s1", "s1/call_1", []byte("new"))
	require.NoError(t, err)
	assert.Equal(t, "new", string(v))
	v, ok, err = open(t, dir).Lookup(ctx, "s1", "s1/call_1")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, "new", string(v))
}

// A whole line that is not an entry (the file was edited) is an error,
// never taken for "no entry": that would run a tool again.
func TestLedgerCorruptLineIsAnError(t *testing.T) {
	ctx := context.Background()
	s, _ := oneEntry(t, "one")
	f, err := os.OpenFile(s.LedgerPath("s1"), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString("not json\n")
	require.NoError(t, err)
	require.NoError(t, f.Close())

	_, _, err = s.Lookup(ctx, "s1", "s1/call_2")
	assert.ErrorIs(t, err, session.ErrCorrupt)
	_, err = s.Record(ctx, "s1", "s1/call_2", []byte("two"))
	assert.ErrorIs(t, err, session.ErrCorrupt)
}

// The ledger is one file beside the log; List does not take it for a log.
func TestLedgerIsAFileBesideTheLog(t *testing.T) {
	ctx := context.Background()
	s, _ := oneEntry(t, "one")
	assert.FileExists(t, s.LedgerPath("s1"))
	infos, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	assert.Equal(t, "s1", infos[0].ID)
}

// oneEntry returns a store on a new directory whose session s1 has one
// ledger entry, s1/call_1 = value.
func oneEntry(t *testing.T, value string) (*jsonl.Store, string) {
	t.Helper()
	dir := t.TempDir()
	s := open(t, dir)
	require.NoError(t, s.Create(context.Background(), info("s1")))
	_, err := s.Record(context.Background(), "s1", "s1/call_1", []byte(value))
	require.NoError(t, err)
	return s, dir
}
