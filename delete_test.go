package vigil_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/store/jsonl"
	pgplugin "github.com/vigil-run/vigil/plugins/store/postgres"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// waiting is an agent on store (configured with cfg) whose first turn
// calls the wait tool, which runs until its context ends.
func waiting(store string, cfg any) vigil.Source {
	return vigil.Compose(
		vigil.Plugin(store, cfg),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{
			{ToolCalls: []scripted.ToolCall{{Name: "wait", Arguments: map[string]any{}}}}, {Text: "fine"}}}),
		vigil.Plugin("test/wait", nil),
		vigil.Plugin("agent", nil),
	)
}

// A session deleted while a worker runs its turn: the turn is stopped
// (ended, its job finished) before the log goes, and the worker goes on
// with other sessions.
func TestDeleteStopsTheWorkersRunningTurn(t *testing.T) {
	for _, store := range []string{"store/memory", "store/jsonl", "store/postgres"} {
		t.Run(store, func(t *testing.T) {
			ctx := context.Background()
			var cfg any
			switch store {
			case "store/jsonl":
				cfg = jsonl.Config{Dir: t.TempDir()}
			case "store/postgres":
				dsn, schema := pgtest.DSN(t), pgtest.Schema(t)
				cfg = &pgplugin.Config{DSN: dsn, Schema: schema}
			}
			rt := open(t, waiting(store, cfg))
			id, err := rt.NewSession(ctx)
			require.NoError(t, err)
			job, _, err := rt.QueueTurn(ctx, id, "wait")
			require.NoError(t, err)
			_, _, err = rt.QueueTurn(ctx, id, "queued behind")
			require.NoError(t, err)
			done := jobs(t, rt, 1)
			<-theBlocker.started

			// A grace far longer than the test's wait: a deletion that
			// did not stop the turn would wait it out.
			deleted, err := rt.DeleteSession(ctx, id, vigil.DeleteOptions{By: "alice", Grace: time.Minute})
			require.NoError(t, err)
			assert.Equal(t, []string{id}, deleted)
			select {
			case j := <-done:
				assert.Equal(t, job.ID, j.ID, "the running job ended before the log went")
			default:
				t.Fatal("the running job had not ended when the delete returned")
			}
			_, err = rt.Session(ctx, id)
			require.ErrorIs(t, err, vigil.ErrNotFound)
			_, err = rt.SessionInfo(ctx, id)
			require.ErrorIs(t, err, vigil.ErrNotFound)
			_, _, err = rt.QueueTurn(ctx, id, "again")
			require.ErrorIs(t, err, vigil.ErrNotFound)
			_, err = rt.DeleteSession(ctx, id, vigil.DeleteOptions{})
			require.ErrorIs(t, err, vigil.ErrNotFound)

			// The worker runs on.
			other, err := rt.NewSession(ctx)
			require.NoError(t, err)
			_, _, err = rt.QueueTurn(ctx, other, "hello")
			require.NoError(t, err)
			waitJobs(t, done, 1)
		})
	}
}

// A child session goes only with its parent's tree; a fork outlives the
// session it was forked from and takes turns.
func TestDeleteTreeKeepsForks(t *testing.T) {
	ctx := context.Background()
	rt := open(t, vigil.Compose(
		vigil.Plugin("store/jsonl", jsonl.Config{Dir: t.TempDir()}),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "fine"}}, Repeat: true}),
		vigil.Plugin("agent", nil),
	))
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "hi"})
	require.NoError(t, err)
	parent := res.Session
	mgr, err := rt.Manager()
	require.NoError(t, err)
	child, err := mgr.CreateChild(ctx, session.Parent{ID: parent, Seq: 1, Call: "call_1"})
	require.NoError(t, err)
	require.NoError(t, child.Close(ctx))
	log, err := rt.Session(ctx, parent)
	require.NoError(t, err)
	fork, err := rt.Fork(ctx, parent, int64(len(log.Records)-1))
	require.NoError(t, err)

	_, err = rt.DeleteSession(ctx, parent, vigil.DeleteOptions{By: "alice"})
	require.ErrorIs(t, err, vigil.ErrHasChildren)
	_, err = rt.Session(ctx, parent)
	require.NoError(t, err, "refused: nothing deleted")

	deleted, err := rt.DeleteSession(ctx, parent, vigil.DeleteOptions{By: "alice", Tree: true})
	require.NoError(t, err)
	assert.Equal(t, []string{child.ID(), parent}, deleted, "children first")
	for _, id := range deleted {
		_, err := rt.Session(ctx, id)
		require.ErrorIs(t, err, vigil.ErrNotFound)
	}
	flog, err := rt.Session(ctx, fork)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(flog.Records), len(log.Records))
	for i, r := range log.Records {
		assert.Equal(t, string(r.Bytes()), string(flog.Records[i].Bytes()), "the fork keeps what it inherited: seq %d", i)
	}
	_, err = rt.Turn(ctx, vigil.TurnOptions{Session: fork, Prompt: "still here?"})
	require.NoError(t, err)
}

// store/jsonl's retention, from plugins.yaml: Prune deletes a session
// whose last record is older than max_age, keeps one exactly that old,
// and a parent until its children go.
func TestPruneByTheStoresRetention(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "plugins.yaml")
	yaml := "plugins:\n" +
		"  - name: store/jsonl\n    config: { dir: " + filepath.Join(dir, "sessions") + ", retention: { max_age: 720h } }\n" +
		"  - name: provider/scripted\n    config: { script: [ { text: \"Fine.\" } ], repeat: true }\n" +
		"  - name: agent\n"
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	rt := open(t, vigil.File(path))
	ret := rt.Retention()
	require.Equal(t, 720*time.Hour, ret.MaxAge)

	old, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "one"})
	require.NoError(t, err)
	log, err := rt.Session(ctx, old.Session)
	require.NoError(t, err)
	last := log.Records[len(log.Records)-1].Time()
	mgr, err := rt.Manager()
	require.NoError(t, err)
	child, err := mgr.CreateChild(ctx, session.Parent{ID: old.Session, Seq: 1, Call: "call_1"})
	require.NoError(t, err)
	require.NoError(t, child.Close(ctx))

	deleted, err := rt.Prune(ctx, ret, last.Add(ret.MaxAge), "retention")
	require.NoError(t, err)
	assert.Empty(t, deleted, "exactly max_age old: kept")

	deleted, err = rt.Prune(ctx, ret, last.Add(ret.MaxAge+time.Second), "retention")
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{child.ID(), old.Session}, deleted, "the child first, then its parent")
	infos, err := rt.Sessions(ctx)
	require.NoError(t, err)
	assert.Empty(t, infos)
}

// A turn this process runs outside the queue (Runtime.Turn) is not
// cancelled by a deletion: the deletion waits its grace, then deletes
// under it, and the turn's next write fails without bringing the session
// back.
func TestDeleteUnderADirectTurn(t *testing.T) {
	ctx := context.Background()
	rt := open(t, waiting("store/jsonl", jsonl.Config{Dir: t.TempDir()}))
	id, err := rt.NewSession(ctx)
	require.NoError(t, err)
	turnCtx, stop := context.WithCancel(ctx)
	defer stop()
	ended := make(chan error, 1)
	go func() {
		_, err := rt.Turn(turnCtx, vigil.TurnOptions{Session: id, Prompt: "wait"})
		ended <- err
	}()
	<-theBlocker.started
	start := time.Now()
	deleted, err := rt.DeleteSession(ctx, id, vigil.DeleteOptions{By: "alice", Grace: 200 * time.Millisecond})
	require.NoError(t, err)
	assert.Equal(t, []string{id}, deleted)
	assert.GreaterOrEqual(t, time.Since(start), 200*time.Millisecond, "it waited the grace")
	stop() // the tool returns; the turn writes its end, which fails
	select {
	case err := <-ended:
		require.Error(t, err)
	case <-time.After(30 * time.Second):
		t.Fatal("the turn did not end")
	}
	_, err = rt.Session(ctx, id)
	require.ErrorIs(t, err, vigil.ErrNotFound, "the turn's writes did not bring the session back")
	infos, err := rt.Sessions(ctx)
	require.NoError(t, err)
	assert.Empty(t, infos)
}
