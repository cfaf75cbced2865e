package sessiontest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// RunLedger runs the conformance suite of [session.Ledger]. newBacking
// makes an empty backing for one subtest and returns open, which returns
// a new handle on it at each call (as another process opening it would);
// every handle must implement session.Ledger. The suite closes the
// handles (those that are io.Closers) when the subtest ends.
func RunLedger(t *testing.T, newBacking func(t *testing.T) (open func(t *testing.T) session.Store)) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open func() session.Ledger)
	}{
		{"LookupOfNothingIsNotFoundYet", testLedgerEmpty},
		{"RecordThenLookupGivesTheBytes", testLedgerBytes},
		{"TheFirstValueStays", testLedgerFirstStays},
		{"ConcurrentRecordsOfOneKeyAgree", testLedgerRace},
		{"AKeyOfAnotherSessionIsRefused", testLedgerForeignKey},
		{"UnknownSessionIsErrNotFound", testLedgerUnknown},
		{"SessionsKeepTheirOwnEntries", testLedgerSessions},
		{"ReturnedBytesAreCopies", testLedgerCopies},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			open := newBacking(t)
			handle := func() session.Ledger {
				s := open(t)
				if cl, ok := s.(io.Closer); ok {
					t.Cleanup(func() { assert.NoError(t, cl.Close()) })
				}
				l, ok := s.(session.Ledger)
				require.True(t, ok, "%T is not a session.Ledger", s)
				return l
			}
			c.fn(t, handle)
		})
	}
}

// ledgerSession creates session id through l's store.
func ledgerSession(t *testing.T, l session.Ledger, id string) {
	t.Helper()
	require.NoError(t, l.(session.Store).Create(context.Background(), info(id)))
}

func testLedgerEmpty(t *testing.T, open func() session.Ledger) {
	l := open()
	ledgerSession(t, l, "s1")
	v, ok, err := l.Lookup(context.Background(), "s1", session.IdempotencyKey("s1", "call_1"))
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Nil(t, v)
}

// ledgerValues are values no encoding may change: every byte, invalid
// UTF-8, newlines, JSON, nothing.
func ledgerValues() [][]byte {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	return [][]byte{all, {0xff, 0xfe, '\n', 0}, []byte("line\nline\r\n\"}\n"), []byte(`{"key":"s1/x","value":"AA=="}`), {}, bytes.Repeat([]byte("é"), 1<<16)}
}

func testLedgerBytes(t *testing.T, open func() session.Ledger) {
	ctx := context.Background()
	l := open()
	ledgerSession(t, l, "s1")
	keys := []string{"call_1", "call \n\"2\"", "call\x00nul", "c/with/slashes", "ünï"}
	for i, v := range ledgerValues() {
		key := session.IdempotencyKey("s1", keys[i%len(keys)]+fmt.Sprint(i))
		stored, err := l.Record(ctx, "s1", key, v)
		require.NoError(t, err)
		assert.Equal(t, v, stored, "Record returns the value it stored")
		// Another handle (another process) reads what this one recorded.
		got, ok, err := open().Lookup(ctx, "s1", key)
		require.NoError(t, err)
		require.True(t, ok, "key %q", key)
		assert.Equal(t, v, got)
		assert.NotNil(t, got, "a stored empty value is not nil")
	}
	// A nil value is stored as empty.
	stored, err := l.Record(ctx, "s1", "s1/nil", nil)
	require.NoError(t, err)
	assert.Equal(t, []byte{}, stored)
}

func testLedgerFirstStays(t *testing.T, open func() session.Ledger) {
	ctx := context.Background()
	l := open()
	ledgerSession(t, l, "s1")
	first, err := l.Record(ctx, "s1", "s1/call_1", []byte("first"))
	require.NoError(t, err)
	assert.Equal(t, []byte("first"), first)
	again, err := open().Record(ctx, "s1", "s1/call_1", []byte("second"))
	require.NoError(t, err)
	assert.Equal(t, []byte("first"), again, "a second Record returns the first value")
	got, ok, err := l.Lookup(ctx, "s1", "s1/call_1")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Equal(t, []byte("first"), got)
}

// Records of one key through several handles at once: exactly one value
// is stored, and every Record returns it.
func testLedgerRace(t *testing.T, open func() session.Ledger) {
	ctx := context.Background()
	handles := []session.Ledger{open(), open(), open()}
	ledgerSession(t, handles[0], "s1")
	for round := range 5 {
		key := session.IdempotencyKey("s1", fmt.Sprint("call_", round))
		const n = 12
		got := make([][]byte, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				v, err := handles[i%len(handles)].Record(ctx, "s1", key, []byte(fmt.Sprint("value ", i)))
				assert.NoError(t, err)
				got[i] = v
			})
		}
		wg.Wait()
		stored, ok, err := handles[0].Lookup(ctx, "s1", key)
		require.NoError(t, err)
		require.True(t, ok)
		for i := range n {
			assert.Equal(t, string(stored), string(got[i]), "record %d of round %d", i, round)
		}
	}
}

func testLedgerForeignKey(t *testing.T, open func() session.Ledger) {
	ctx := context.Background()
	l := open()
	ledgerSession(t, l, "s1")
	ledgerSession(t, l, "s2")
	for _, key := range []string{"s2/call_1", "s1", "s1/", "/call_1", "s10/call_1", "s/call_1", "", "s1/\xff", "x\x00/call"} {
		_, err := l.Record(ctx, "s1", key, []byte("v"))
		assert.ErrorIs(t, err, session.ErrLedgerKey, "Record %q", key)
		_, _, err = l.Lookup(ctx, "s1", key)
		assert.ErrorIs(t, err, session.ErrLedgerKey, "Lookup %q", key)
	}
	// Nothing was stored under s2's key by s1's refused Record.
	_, ok, err := l.Lookup(ctx, "s2", "s2/call_1")
	require.NoError(t, err)
	assert.False(t, ok)
}

func testLedgerUnknown(t *testing.T, open func() session.Ledger) {
	ctx := context.Background()
	l := open()
	_, err := l.Record(ctx, "nope", "nope/call_1", []byte("v"))
	assert.ErrorIs(t, err, session.ErrNotFound)
	_, _, err = l.Lookup(ctx, "nope", "nope/call_1")
	assert.ErrorIs(t, err, session.ErrNotFound)
	// A Record refused for an unknown session stores nothing the session
	// would find once it exists.
	ledgerSession(t, l, "nope")
	_, ok, err := l.Lookup(ctx, "nope", "nope/call_1")
	require.NoError(t, err)
	assert.False(t, ok)
}

func testLedgerSessions(t *testing.T, open func() session.Ledger) {
	ctx := context.Background()
	l := open()
	for _, id := range []string{"a", "b"} {
		ledgerSession(t, l, id)
		_, err := l.Record(ctx, id, id+"/call_1", []byte(id))
		require.NoError(t, err)
	}
	for _, id := range []string{"a", "b"} {
		v, ok, err := l.Lookup(ctx, id, id+"/call_1")
		require.NoError(t, err)
		assert.True(t, ok)
		assert.Equal(t, id, string(v))
	}
}

func testLedgerCopies(t *testing.T, open func() session.Ledger) {
	ctx := context.Background()
	l := open()
	ledgerSession(t, l, "s1")
	in := []byte("value")
	stored, err := l.Record(ctx, "s1", "s1/k", in)
	require.NoError(t, err)
	in[0], stored[0] = 'X', 'Y'
	got, _, err := l.Lookup(ctx, "s1", "s1/k")
	require.NoError(t, err)
	assert.Equal(t, "value", string(got))
	got[0] = 'Z'
	again, _, err := l.Lookup(ctx, "s1", "s1/k")
	require.NoError(t, err)
	assert.Equal(t, "value", string(again))
}
