package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
	"github.com/vigil-run/vigil/session/sessiontest"
)

var pgEpoch = time.Date(2026, 11, 29, 20, 21, 24, 0, time.UTC)

// lockedBuffer is a bytes.Buffer safe for a writer and a reader.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func pgTestEnv(stdout, stderr interface{ Write([]byte) (int, error) }) *env {
	return &env{stdin: strings.NewReader(""), stdout: stdout, stderr: stderr, getenv: func(string) string { return "" }}
}

func pgTestManager(t *testing.T, store session.Store) *live.Manager {
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	n := 0
	return live.NewManager(root.Context(), store,
		live.WithClock(func() time.Time { return pgEpoch }),
		live.WithIDs(func() string { n++; return fmt.Sprintf("imp%d", n) }))
}

// jsonlWithLogs returns a jsonl store holding a two-turn session and a
// fork of it, and their files concatenated, as `vigil sessions export`
// would print them one after the other.
func jsonlWithLogs(t *testing.T) (*jsonl.Store, []string, []byte) {
	ctx := context.Background()
	js, err := jsonl.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = js.Close() })
	m := pgTestManager(t, js)
	s, err := m.Create(ctx)
	require.NoError(t, err)
	for _, r := range append(sessiontest.Turn(t, 0, 1), sessiontest.Turn(t, 17, 2)...) {
		_, err := s.Append(ctx, session.Event{Type: r.Type(), Turn: r.Turn(), Step: r.Step(), Sources: r.Sources(), Data: r.Data()})
		require.NoError(t, err)
	}
	require.NoError(t, s.Close(ctx))
	f, err := m.Fork(ctx, s.ID(), 16)
	require.NoError(t, err)
	require.NoError(t, f.Close(ctx))
	var all []byte
	for _, id := range []string{s.ID(), f.ID()} {
		b, err := os.ReadFile(js.Path(id))
		require.NoError(t, err)
		all = append(all, b...)
	}
	return js, []string{s.ID(), f.ID()}, all
}

func TestSessionsImportAndExportBetweenJSONLAndPostgresKeepEveryByte(t *testing.T) {
	ctx := context.Background()
	js, ids, input := jsonlWithLogs(t)
	pg := pgTestManager(t, pgtest.Store(t))

	var out, errOut bytes.Buffer
	require.NoError(t, sessionsImport(ctx, pgTestEnv(&out, &errOut), pg, bytes.NewReader(input)))
	require.Equal(t, strings.Join(ids, "\n")+"\n", out.String())
	require.Empty(t, errOut.String())
	var exported []byte
	for _, id := range ids {
		want, err := os.ReadFile(js.Path(id))
		require.NoError(t, err)
		log, err := pg.Store().Load(ctx, id)
		require.NoError(t, err)
		got := encodeLog(log.Info, log.Records) // what `vigil sessions export` prints
		require.Equal(t, string(want), string(got), "session %s", id)
		exported = append(exported, got...)
	}

	// And back into another jsonl store: the same files.
	js2, err := jsonl.Open(t.TempDir())
	require.NoError(t, err)
	t.Cleanup(func() { _ = js2.Close() })
	out.Reset()
	require.NoError(t, sessionsImport(ctx, pgTestEnv(&out, &errOut), pgTestManager(t, js2), bytes.NewReader(exported)))
	for _, id := range ids {
		want, err := os.ReadFile(js.Path(id))
		require.NoError(t, err)
		got, err := os.ReadFile(js2.Path(id))
		require.NoError(t, err)
		require.Equal(t, string(want), string(got))
	}
}

func TestSessionsImportSkipsExistingAndCorruptLogsAndImportsTheRest(t *testing.T) {
	ctx := context.Background()
	_, ids, input := jsonlWithLogs(t)
	pg := pgTestManager(t, pgtest.Store(t))
	first := input[:bytes.Index(input[1:], []byte(`{"type":"session"`))+1]
	var out, errOut bytes.Buffer
	require.NoError(t, sessionsImport(ctx, pgTestEnv(&out, &errOut), pg, bytes.NewReader(first)))

	// The first log again, and a third one corrupt at its line 3.
	corrupt := session.AppendHeaderLine(nil, session.Info{ID: "bad", Created: pgEpoch})
	corrupt = append(corrupt, sessiontest.Turn(t, 0, 1)[0].String()+"\n"+`{"seq":5,"type":"turn/start"}`+"\n"...)
	out.Reset()
	err := sessionsImport(ctx, pgTestEnv(&out, &errOut), pg, bytes.NewReader(append(append([]byte(nil), input...), corrupt...)))
	require.ErrorContains(t, err, "session "+ids[0]+" already exists in this store; not imported")
	require.ErrorIs(t, err, session.ErrCorrupt)
	require.ErrorContains(t, err, "line 3")
	require.Equal(t, ids[1]+"\n", out.String(), "the fork was imported")
	_, lerr := pg.Store().Load(ctx, "bad")
	require.ErrorIs(t, lerr, session.ErrNotFound)
}

func TestSessionsImportDropsATornLastLine(t *testing.T) {
	ctx := context.Background()
	pg := pgTestManager(t, pgtest.Store(t))
	recs := sessiontest.Turn(t, 0, 1)
	in := session.AppendHeaderLine(nil, session.Info{ID: "torn", Created: pgEpoch})
	for _, r := range recs[:5] {
		in = r.AppendLine(in)
	}
	in = append(in, recs[5].String()[:20]...)
	var out, errOut bytes.Buffer
	require.NoError(t, sessionsImport(ctx, pgTestEnv(&out, &errOut), pg, bytes.NewReader(in)))
	require.Contains(t, errOut.String(), "session torn: dropped a torn last line (20 bytes)")
	log, err := pg.Store().Load(ctx, "torn")
	require.NoError(t, err)
	require.Len(t, log.Records, 5)
}

func TestSessionsImportOfNothingIsAUsageError(t *testing.T) {
	var out, errOut bytes.Buffer
	err := sessionsImport(context.Background(), pgTestEnv(&out, &errOut), pgTestManager(t, pgtest.Store(t)), strings.NewReader("\n"))
	var ue usageError
	require.ErrorAs(t, err, &ue)
}

func TestSessionsTailFollowsAppendsFromAnotherProcess(t *testing.T) {
	schema := pgtest.Schema(t)
	tailStore, writer := pgtest.StoreIn(t, schema), pgtest.StoreIn(t, schema)
	testTail(t, tailStore, writer)
}

func TestSessionsTailPollsAStoreThatCannotFollow(t *testing.T) {
	dir := t.TempDir()
	tailStore, err := jsonl.Open(dir)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tailStore.Close() })
	writer, err := jsonl.Open(dir, jsonl.WithSyncInterval(0))
	require.NoError(t, err)
	t.Cleanup(func() { _ = writer.Close() })
	testTail(t, tailStore, writer)
}

func testTail(t *testing.T, tailStore, writer session.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	info := session.Info{ID: "s", Version: session.Version, Created: pgEpoch}
	require.NoError(t, writer.Create(ctx, info))
	recs := sessiontest.Turn(t, 0, 1)
	require.NoError(t, writer.Append(ctx, "s", 0, recs[:2]))

	out := &lockedBuffer{}
	ended := make(chan error, 1)
	go func() { ended <- sessionsTail(ctx, pgTestEnv(out, &bytes.Buffer{}), pgTestManager(t, tailStore), "s") }()
	want := string(session.AppendHeaderLine(nil, info))
	for i := range recs {
		if i >= 2 {
			require.NoError(t, writer.Append(ctx, "s", int64(i), recs[i:i+1]))
		}
		want += recs[i].String() + "\n"
		if i < 1 {
			continue // seqs 0 and 1 were stored before the tail started
		}
		require.Eventually(t, func() bool { return out.String() == want }, 5*time.Second, 5*time.Millisecond, "after seq %d", i)
	}
	cancel()
	select {
	case err := <-ended:
		require.NoError(t, err, "Ctrl-C ends a tail without an error")
	case <-time.After(5 * time.Second):
		t.Fatal("the tail did not end")
	}
	require.Equal(t, want, out.String())
}

func TestSessionsTailOfAnUnknownSession(t *testing.T) {
	err := sessionsTail(context.Background(), pgTestEnv(&bytes.Buffer{}, &bytes.Buffer{}), pgTestManager(t, pgtest.Store(t)), "nope")
	require.ErrorIs(t, err, session.ErrNotFound)
}
