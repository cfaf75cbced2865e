package agentloop_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
)

// verifyDigests re-derives every step's request from the log, as `vigil
// verify` does, and compares it with the logged request/digest.
func verifyDigests(t *testing.T, recs []session.Record) int {
	t.Helper()
	n := 0
	var stepStart int64 = -1
	for i, r := range recs {
		switch r.Type() {
		case session.TypeStepStart:
			stepStart = r.Seq()
		case session.TypeRequestDigest:
			msgs, err := session.DeriveMessages(recs[:stepStart])
			require.NoError(t, err)
			h, ok := session.DeriveHeader(recs[:i])
			require.True(t, ok)
			d := decode[session.Digest](t, r)
			assert.Equal(t, session.RequestDigest(h, msgs), d.SHA256, "digest at seq %d", r.Seq())
			assert.Equal(t, len(msgs), d.Messages)
			n++
		}
	}
	return n
}

func TestTurnsOnJSONLStoreReloadAndVerify(t *testing.T) {
	dir := t.TempDir()
	store, err := jsonl.Open(dir)
	require.NoError(t, err)
	e := newEnvWith(t, store)
	_, tools := workspace(t)
	a := agentloop.New(e.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(script(t)), agentloop.WithTools(tools...))
	sess := e.session()
	for _, p := range []string{"look around", "and again"} {
		res, err := a.Run(context.Background(), sess, p)
		require.NoError(t, err)
		assert.Equal(t, session.ReasonCompleted, res.Reason)
	}
	want := sess.Records()
	require.NoError(t, sess.Close(context.Background()))
	require.NoError(t, store.Close())

	// A new process: a new store over the same directory.
	store2, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer store2.Close()
	e2 := newEnvWith(t, store2)
	loaded, err := e2.mgr.Open(context.Background(), sess.ID())
	require.NoError(t, err)
	got := loaded.Records()
	require.Len(t, got, len(want))
	for i := range want {
		assert.Equal(t, want[i].Bytes(), got[i].Bytes())
	}
	assert.Equal(t, 4, verifyDigests(t, got))

	// The reloaded session continues with a resumed header.
	b := agentloop.New(e2.c, agentloop.Config{System: "s", Model: "scripted"}, agentloop.WithProvider(script(t)), agentloop.WithTools(tools...))
	res, err := b.Run(context.Background(), loaded, "third")
	require.NoError(t, err)
	assert.Equal(t, 3, res.Turn)
	assert.Equal(t, []string{session.HeaderInitial, session.HeaderResume}, headers(t, loaded))
	assert.Equal(t, 6, verifyDigests(t, loaded.Records()))
}
