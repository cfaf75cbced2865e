package jsonl_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/flock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/sessiontest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func open(t *testing.T, dir string, opts ...jsonl.Option) *jsonl.Store {
	t.Helper()
	s, err := jsonl.Open(dir, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func info(id string) session.Info {
	return session.Info{ID: id, Version: session.Version, Created: epoch}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

func TestOneWriterPerSession(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	require.NoError(t, a.Create(ctx, info("s1")))
	recs := sessiontest.Turn(t, 0, 1)
	require.NoError(t, a.Append(ctx, "s1", 0, recs[:3]))

	require.ErrorIs(t, b.Append(ctx, "s1", 3, recs[3:]), session.ErrLocked)
	log, err := b.Load(ctx, "s1")
	require.NoError(t, err, "readers take no lock")
	assert.Empty(t, log.Records, "a's group is not written yet")
	require.NoError(t, a.Flush(ctx, "s1"))
	log, err = b.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Len(t, log.Records, 3)

	require.NoError(t, a.Release("s1"))
	require.NoError(t, b.Append(ctx, "s1", 3, recs[3:]))
	// b's turn is over, so b let the file go; a takes it, learning what
	// b appended, and holds it while its turn is open.
	next := sessiontest.Turn(t, int64(len(recs)), 2)
	require.ErrorIs(t, a.Append(ctx, "s1", 3, next[:1]), session.ErrConflict)
	require.NoError(t, a.Append(ctx, "s1", int64(len(recs)), next[:1]))
	require.ErrorIs(t, b.Append(ctx, "s1", int64(len(recs))+1, next[1:]), session.ErrLocked)
}

func TestTakeoverCutsTornTail(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs := sessiontest.Turn(t, 0, 1)
	content := string(session.AppendHeaderLine(nil, info("s1"))) + string(recs[0].AppendLine(nil)) + `{"seq":1,"type":"user/mes`
	path := filepath.Join(dir, "s1.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	s := open(t, dir)

	log, err := s.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Len(t, log.Records, 1)
	assert.Equal(t, len(`{"seq":1,"type":"user/mes`), log.Torn)
	assert.Equal(t, content, readFile(t, path), "loading does not write")

	require.NoError(t, s.Append(ctx, "s1", 1, recs[1:]))
	require.NoError(t, s.Flush(ctx, "s1"))
	got, err := session.DecodeBytes([]byte(readFile(t, path)))
	require.NoError(t, err, "the torn bytes are gone")
	assert.Len(t, got.Records, len(recs))
}

func TestTakeoverRefusesCorruptLog(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	recs := sessiontest.Turn(t, 0, 1)
	content := string(session.AppendHeaderLine(nil, info("s1"))) + "garbage\n" + string(recs[1].AppendLine(nil))
	path := filepath.Join(dir, "s1.jsonl")
	require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	s := open(t, dir)
	err := s.Append(ctx, "s1", 2, recs[2:3])
	require.ErrorIs(t, err, session.ErrCorrupt)
	var ce *session.CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Equal(t, 2, ce.Line)
	assert.Equal(t, content, readFile(t, path))
	_, err = s.Load(ctx, "s1")
	require.ErrorIs(t, err, session.ErrMalformed)
}

func TestHeaderMustNameItsFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "s1.jsonl"), session.AppendHeaderLine(nil, info("s2")), 0o644))
	s := open(t, dir)
	_, err := s.Load(ctx, "s1")
	require.ErrorIs(t, err, session.ErrCorrupt)
	require.ErrorIs(t, s.Append(ctx, "s1", 0, nil), session.ErrCorrupt)
}

func TestReopenedStoreSeesWhatWasDurable(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := open(t, dir)
	require.NoError(t, a.Create(ctx, info("s1")))
	recs := sessiontest.Turn(t, 0, 1)
	require.NoError(t, a.Append(ctx, "s1", 0, recs))
	require.NoError(t, a.Close())
	require.ErrorIs(t, a.Append(ctx, "s1", 17, nil), session.ErrClosed)

	b := open(t, dir)
	log, err := b.Load(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, log.Records, len(recs))
	for i := range recs {
		assert.Equal(t, recs[i].Bytes(), log.Records[i].Bytes())
	}
	assert.Equal(t, filepath.Join(dir, "s1.jsonl"), b.Path("s1"))
}

func TestStepEndIsWrittenBeforeAppendReturns(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir, jsonl.WithSyncInterval(time.Hour))
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := sessiontest.Turn(t, 0, 1) // recs[11] is the first step/end
	path := s.Path("s1")
	require.NoError(t, s.Append(ctx, "s1", 0, recs[:5]))
	assert.NotContains(t, readFile(t, path), `"seq":0`, "buffered until the step ends")
	for i := 5; i <= 11; i++ {
		require.NoError(t, s.Append(ctx, "s1", int64(i), recs[i:i+1]))
	}
	assert.Contains(t, readFile(t, path), `"seq":11,"type":"step/end"`)
	require.NoError(t, s.Append(ctx, "s1", 12, recs[12:14]))
	require.NoError(t, s.Flush(ctx, "s1"))
	assert.Contains(t, readFile(t, path), `"seq":13`)
}

func TestSyncTimerWritesBufferedAppends(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), jsonl.WithSyncInterval(20*time.Millisecond))
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := sessiontest.Turn(t, 0, 1)
	require.NoError(t, s.Append(ctx, "s1", 0, recs[:3]))
	require.Eventually(t, func() bool {
		return strings.Contains(readFile(t, s.Path("s1")), `"seq":2`)
	}, 5*time.Second, 5*time.Millisecond)
	// The timer re-arms for the next group.
	require.NoError(t, s.Append(ctx, "s1", 3, recs[3:5]))
	require.Eventually(t, func() bool {
		return strings.Contains(readFile(t, s.Path("s1")), `"seq":4`)
	}, 5*time.Second, 5*time.Millisecond)
}

func TestZeroIntervalWritesEveryAppend(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir(), jsonl.WithSyncInterval(0))
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := sessiontest.Turn(t, 0, 1)
	require.NoError(t, s.Append(ctx, "s1", 0, recs[:1]))
	assert.Contains(t, readFile(t, s.Path("s1")), `"seq":0`)
}

func TestListSkipsForeignFilesAndNamesBrokenOnes(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	require.NoError(t, s.Create(ctx, info("s1")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("x"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".s9.123.tmp"), []byte("x"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "sub.jsonl"), 0o755))
	list, err := s.List(ctx)
	require.NoError(t, err)
	require.Len(t, list, 1)

	require.NoError(t, os.WriteFile(filepath.Join(dir, "s2.jsonl"), []byte(`{"type":"session","version":9,"id":"s2","created":"2026-11-29T20:21:24Z"}`+"\n"), 0o644))
	_, err = s.List(ctx)
	require.ErrorIs(t, err, session.ErrVersion)
	assert.Contains(t, err.Error(), "s2.jsonl")
}

// TestListNamesEachBrokenFileAndListsTheRest: one bad file does not hide
// the store.
func TestListNamesEachBrokenFileAndListsTheRest(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	for _, id := range []string{"a", "c", "e"} {
		require.NoError(t, s.Create(ctx, info(id)))
	}
	bad := map[string]error{
		"b.jsonl": session.ErrMalformed, // empty
		"d.jsonl": session.ErrMalformed, // garbage
		"f.jsonl": session.ErrVersion,
		"g.jsonl": session.ErrCorrupt, // the header names another session
		"h.jsonl": session.ErrTornTail,
	}
	files := map[string]string{
		"b.jsonl": "",
		"d.jsonl": "\x00garbage\n",
		"f.jsonl": `{"type":"session","version":2,"id":"f","created":"2026-11-29T20:21:24.000Z"}` + "\n",
		"g.jsonl": `{"type":"session","version":1,"id":"a","created":"2026-11-29T20:21:24.000Z"}` + "\n",
		"h.jsonl": `{"type":"session","version":1,"id":"h","crea`,
	}
	for name, content := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	list, err := s.List(ctx)
	var le *session.ListError
	require.ErrorAs(t, err, &le)
	ids := make([]string, len(list))
	for i, in := range list {
		ids[i] = in.ID
	}
	assert.Equal(t, []string{"a", "c", "e"}, ids)
	require.Len(t, le.Entries, len(bad))
	for _, e := range le.Entries {
		assert.ErrorIs(t, e.Err, bad[e.Name], e.Name)
		assert.Contains(t, err.Error(), e.Name)
	}
}

func TestCreateLeavesNoTemporaryFiles(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	require.NoError(t, s.Create(ctx, info("s1")))
	require.ErrorIs(t, s.Create(ctx, info("s1")), session.ErrExists)
	require.NoError(t, s.Release("s1"), "the writer's s1.lock goes with it")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 1)
	assert.Equal(t, "s1.jsonl", entries[0].Name())
}

// TestOpenRemovesStaleTemporaryFiles: a crash while a session file is
// created leaves its temporary file; opening the store removes it, and
// only it: not one an install still holds, nor files of other names.
func TestOpenRemovesStaleTemporaryFiles(t *testing.T) {
	dir := t.TempDir()
	stale := []string{".s1.123.tmp", ".01JD0000000000000000000000.4294967295.tmp"}
	kept := []string{".s2.456.tmp", ".s3.tmp", ".s4.12a.tmp", ".a.b.1.tmp", "s5.123.tmp", ".s6.123.tmp.bak", "notes.txt"}
	old := time.Now().Add(-time.Hour)
	for _, name := range append(slices.Clone(stale), kept...) {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(`{"type":"ses`), 0o644))
		require.NoError(t, os.Chtimes(filepath.Join(dir, name), old, old))
	}
	// A temporary file just created may not be locked yet.
	kept = append(kept, ".s7.789.tmp")
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".s7.789.tmp"), nil, 0o644))
	// An install in progress (in another process) holds its file's lock.
	busy := flock.New(filepath.Join(dir, ".s2.456.tmp"), flock.SetFlag(os.O_RDONLY))
	ok, err := busy.TryLock()
	require.NoError(t, err)
	require.True(t, ok)
	defer busy.Close()

	open(t, dir)
	for _, name := range stale {
		assert.NoFileExists(t, filepath.Join(dir, name))
	}
	for _, name := range kept {
		assert.FileExists(t, filepath.Join(dir, name))
	}
}

// TestOpeningStoresNeverBreakACreate: stores opening the directory while
// another creates sessions never remove a temporary file in use.
func TestOpeningStoresNeverBreakACreate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			o, err := jsonl.Open(dir)
			if assert.NoError(t, err) {
				assert.NoError(t, o.Close())
			}
		}
	}()
	for i := range 50 {
		require.NoError(t, s.Create(ctx, info(fmt.Sprintf("s%d", i))))
	}
	close(stop)
	wg.Wait()
}

// TestLeaseIsTheFileLock: a lease is the session's writer; another store
// is refused, naming the holder, or waits for it with wait.
func TestLeaseIsTheFileLock(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	require.NoError(t, a.Create(ctx, info("s1")))
	require.NoError(t, a.Release("s1"))

	releaseA, err := a.Lease(ctx, "s1", false)
	require.NoError(t, err)
	assert.FileExists(t, filepath.Join(dir, "s1.lock"), "the holder is recorded")
	_, err = b.Lease(ctx, "s1", false)
	require.ErrorIs(t, err, session.ErrLocked)
	assert.Contains(t, err.Error(), fmt.Sprintf("held by pid %d on ", os.Getpid()))
	var le *session.LockError
	require.ErrorAs(t, err, &le, "a waiter can show the holder")
	assert.Contains(t, le.Holder, fmt.Sprintf("pid %d on ", os.Getpid()))
	assert.True(t, le.Expires.IsZero(), "a file lock lasts as long as its holder")
	recs := sessiontest.Turn(t, 0, 1)
	require.ErrorIs(t, b.Append(ctx, "s1", 0, recs), session.ErrLocked, "appends need the lock too")

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.Lease(cancelled, "s1", true)
	require.ErrorIs(t, err, context.Canceled)

	got := make(chan error, 1)
	var releaseB func()
	go func() {
		var err error
		releaseB, err = b.Lease(ctx, "s1", true)
		got <- err
	}()
	require.NoError(t, a.Append(ctx, "s1", 0, recs), "the holder appends while the other waits")
	releaseA()
	require.NoError(t, <-got)
	require.ErrorIs(t, a.Append(ctx, "s1", int64(len(recs)), sessiontest.Turn(t, int64(len(recs)), 2)), session.ErrLocked)
	require.NoError(t, b.Append(ctx, "s1", int64(len(recs)), sessiontest.Turn(t, int64(len(recs)), 2)))
	releaseB()
	releaseB() // idempotent
	assert.NoFileExists(t, filepath.Join(dir, "s1.lock"), "the holder removes its record")
	log, err := a.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Len(t, log.Records, 2*len(recs))

	_, err = b.Lease(ctx, "nope", true)
	require.ErrorIs(t, err, session.ErrNotFound)
}

// TestLeaseOfASessionTheStoreCreated: the creator holds the lock already.
func TestLeaseOfASessionTheStoreCreated(t *testing.T) {
	ctx := context.Background()
	s := open(t, t.TempDir())
	require.NoError(t, s.Create(ctx, info("s1")))
	release, err := s.Lease(ctx, "s1", false)
	require.NoError(t, err)
	require.NoError(t, s.Release("s1"))
	release() // released already: nothing to do
	release, err = s.Lease(ctx, "s1", false)
	require.NoError(t, err)
	release()
}
