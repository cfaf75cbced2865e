package jsonl_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// queueHarness gives the queue's suites (RunQueue, RunDelete) stores on
// one directory, as processes sharing it have.
var queueHarness = sessiontest.QueueHarness{
	New: func(t *testing.T) func(t *testing.T) session.Store {
		dir := t.TempDir()
		return func(t *testing.T) session.Store { return open(t, dir) }
	},
	Crash: func(t *testing.T, s session.Store) { jsonl.Crash(s.(*jsonl.Store)) },
}

func TestQueueConformance(t *testing.T) { sessiontest.RunQueue(t, queueHarness) }

func TestFollowConformance(t *testing.T) {
	sessiontest.RunFollow(t, func(t *testing.T) func(t *testing.T) session.Store {
		dir := t.TempDir()
		return func(t *testing.T) session.Store { return open(t, dir) }
	})
}

func journal(dir string) string { return filepath.Join(dir, ".queue", "journal") }

func enqueue(t *testing.T, s *jsonl.Store, id string) session.Job {
	t.Helper()
	j, _, err := s.Enqueue(context.Background(), session.Job{Session: id, Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	return j
}

func claim(t *testing.T, s *jsonl.Store) session.Claim {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := s.Claim(ctx, "w")
	require.NoError(t, err)
	return c
}

func jobIDs(t *testing.T, s *jsonl.Store, id string) []string {
	t.Helper()
	jobs, err := s.Jobs(context.Background(), id)
	require.NoError(t, err)
	var out []string
	for _, j := range jobs {
		out = append(out, j.ID)
	}
	return out
}

func TestQueueJournalIsCompacted(t *testing.T) {
	defer jsonl.SetCompactLines(16)()
	defer jsonl.SetFinishedLimit(1)()
	ctx := context.Background()
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	for _, id := range []string{"s1", "s2"} {
		require.NoError(t, a.Create(ctx, info(id)))
		require.NoError(t, a.Release(id))
	}
	kept := enqueue(t, a, "s2")
	held := claim(t, b)
	require.Equal(t, kept.ID, held.Job().ID)
	require.NoError(t, held.Start(ctx, 4))
	var last session.Job
	for i := range 40 {
		last = enqueue(t, a, "s1")
		c := claim(t, a)
		require.Equal(t, last.ID, c.Job().ID)
		require.NoError(t, c.Finish(ctx, session.Outcome{}))
		if i == 5 {
			require.Equal(t, []string{kept.ID}, jobIDs(t, b, "s2"), "b has replayed part of the journal")
		}
	}
	require.NoError(t, held.Release(ctx), "b's claim is in the compacted journal")
	waiting := enqueue(t, a, "s1")

	lines := strings.Count(readFile(t, journal(dir)), "\n")
	assert.Less(t, lines, 16+4, "compacted, not %d lines", lines)
	for _, s := range []*jsonl.Store{b, open(t, dir)} {
		assert.Equal(t, []string{waiting.ID}, jobIDs(t, s, "s1"), "a replay across the compaction")
		j, err := s.Job(ctx, last.ID)
		require.NoError(t, err)
		assert.Equal(t, session.JobDone, j.State, "the last finished job is kept across the compaction")
		jobs, err := s.Jobs(ctx, "s2")
		require.NoError(t, err)
		require.Len(t, jobs, 1)
		assert.Equal(t, kept.ID, jobs[0].ID)
		assert.Equal(t, int64(4), jobs[0].Base)
		assert.Equal(t, 1, jobs[0].Attempts)
		assert.Equal(t, session.JobQueued, jobs[0].State)
		assert.Equal(t, `{}`, string(jobs[0].Input))
	}
	next := enqueue(t, open(t, dir), "s1")
	assert.Greater(t, next.ID, waiting.ID, "ids go on after a compaction")
	assert.Greater(t, waiting.ID, last.ID)
}

func TestQueueTornJournalLineIsCut(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := open(t, dir)
	require.NoError(t, a.Create(ctx, info("s1")))
	j1 := enqueue(t, a, "s1")
	// A write cut short by a crash.
	f, err := os.OpenFile(journal(dir), os.O_WRONLY|os.O_APPEND, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"op":"enqueue","id":"0000000000000002","session":"s1","kind":"turn","input":"` + strings.Repeat("A", 400))
	require.NoError(t, err)
	require.NoError(t, f.Close())

	b := open(t, dir)
	assert.Equal(t, []string{j1.ID}, jobIDs(t, b, "s1"), "the torn line is not read")
	j2 := enqueue(t, b, "s1")
	for i, l := range strings.Split(strings.TrimSuffix(readFile(t, journal(dir)), "\n"), "\n") {
		assert.True(t, json.Valid([]byte(l)), "line %d: %s", i+1, l)
	}
	assert.Equal(t, []string{j1.ID, j2.ID}, jobIDs(t, open(t, dir), "s1"))
	assert.Equal(t, []string{j1.ID, j2.ID}, jobIDs(t, a, "s1"))
}

func TestQueueCorruptJournalIsAnError(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := open(t, dir)
	require.NoError(t, a.Create(ctx, info("s1")))
	enqueue(t, a, "s1")
	require.NoError(t, os.WriteFile(journal(dir), []byte("not json\n"), 0o644))
	_, err := open(t, dir).Jobs(ctx, "s1")
	assert.ErrorIs(t, err, session.ErrCorrupt)
	_, _, err = open(t, dir).Enqueue(ctx, session.Job{Session: "s1", Kind: "turn"})
	assert.ErrorIs(t, err, session.ErrCorrupt, "nothing is written after a line it cannot read")
}

func TestQueueStoreOnlyReadCreatesNoQueue(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a := open(t, dir)
	require.NoError(t, a.Create(ctx, info("s1")))
	jobs, err := a.Jobs(ctx, "s1")
	require.NoError(t, err)
	assert.Empty(t, jobs)
	n, err := a.Cancel(ctx, "s1")
	require.NoError(t, err)
	assert.Zero(t, n)
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	_, err = a.Claim(short, "w")
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.NoDirExists(t, filepath.Join(dir, ".queue"))
	infos, err := a.List(ctx)
	require.NoError(t, err)
	assert.Len(t, infos, 1, "the queue's files are not sessions")
}
