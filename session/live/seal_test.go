package live_test

import (
	"context"
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/mod/sumdb/note"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// checkpointsOf checks every checkpoint of records against the records
// before it and returns their seqs.
func checkpointsOf(t *testing.T, v note.Verifier, info session.Info, records []session.Record) []int64 {
	var seqs []int64
	var tree session.MerkleTree
	for _, r := range records {
		if msg, ok := session.CheckpointNote(r); ok {
			n, err := note.Open(msg, note.VerifierList(v))
			require.NoError(t, err)
			c, err := session.ParseCheckpoint(n.Text)
			require.NoError(t, err)
			assert.Equal(t, session.Checkpoint{Origin: session.CheckpointOrigin(info.ID), Size: r.Seq(), Root: tree.Root(), Header: session.HeaderHashOf(info)}, c)
			seqs = append(seqs, r.Seq())
		}
		tree.AddRecord(r)
	}
	return seqs
}

func TestSigningSessionCheckpointsTurnEndsLongTurnsAndClose(t *testing.T) {
	ctx := context.Background()
	skey, vkey, err := note.GenerateKey(rand.Reader, "test")
	require.NoError(t, err)
	signer, err := note.NewSigner(skey)
	require.NoError(t, err)
	verifier, err := note.NewVerifier(vkey)
	require.NoError(t, err)
	root := bus.New()
	defer func() { _ = root.Dispose() }()
	store := memory.New()
	m := live.NewManager(root.Context(), store, live.WithSigner(signer))
	s, err := m.Create(ctx)
	require.NoError(t, err)
	app := func(ev session.Event) {
		_, err := s.Append(ctx, ev)
		require.NoError(t, err)
	}
	app(session.Event{Type: session.TypeTurnStart, Turn: 1, Data: session.TurnStart{}})
	app(session.Event{Type: session.TypeUserMessage, Turn: 1, Data: session.UserMessage{Content: "go"}})
	for step := 1; step <= 20; step++ {
		app(session.Event{Type: session.TypeStepStart, Turn: 1, Step: step, Data: session.StepStart{}})
		app(session.Event{Type: session.TypeStepEnd, Turn: 1, Step: step, Data: session.StepEnd{Finish: session.FinishToolCalls}})
	}
	app(session.Event{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
	recs := s.Records()
	end := int64(len(recs) - 2) // the turn/end, then its checkpoint
	require.Equal(t, session.TypeTurnEnd, recs[end].Type())
	// One in the long turn (at the step/end that left 32 records uncovered),
	// one after the turn/end.
	assert.Equal(t, []int64{32, end + 1}, checkpointsOf(t, verifier, s.Info(), recs))

	receipt, err := s.Checkpoint(ctx)
	require.NoError(t, err)
	assert.Equal(t, s.Len(), len(recs), "the last record is a checkpoint: none is added")
	got, _ := session.CheckpointNote(recs[end+1])
	assert.Equal(t, got, receipt, "the receipt is the last checkpoint")

	app(session.Event{Type: session.TypeTurnStart, Turn: 2, Data: session.TurnStart{}})
	require.NoError(t, s.Close(ctx))
	log, err := store.Load(ctx, s.ID())
	require.NoError(t, err)
	assert.Equal(t, []int64{32, end + 1, end + 3}, checkpointsOf(t, verifier, s.Info(), log.Records), "close signs what follows the last checkpoint")

	// Reopened, the open turn 2 is repaired, and the repair's turn/end
	// signed as any turn's end.
	s2, err := m.Open(ctx, s.ID())
	require.NoError(t, err)
	recs2 := s2.Records()
	assert.Equal(t, []int64{32, end + 1, end + 3, end + 5}, checkpointsOf(t, verifier, s.Info(), recs2))
	last, _ := session.CheckpointNote(recs2[end+5])
	assert.Equal(t, last, s2.LastCheckpoint())
	// Closed with nothing appended since, it signs nothing more.
	require.NoError(t, s2.Close(ctx))
	again, err := store.Load(ctx, s.ID())
	require.NoError(t, err)
	assert.Len(t, again.Records, len(recs2))

	// Opened and closed by a reader, an unsigned session stays unsigned.
	plain := live.NewManager(root.Context(), store)
	u, err := plain.Create(ctx)
	require.NoError(t, err)
	_, err = u.Append(ctx, session.Event{Type: session.TypeTurnStart, Turn: 1, Data: session.TurnStart{}})
	require.NoError(t, err)
	_, err = u.Append(ctx, session.Event{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
	require.NoError(t, err)
	require.NoError(t, u.Close(ctx))
	u2, err := m.Open(ctx, u.ID())
	require.NoError(t, err)
	require.NoError(t, u2.Close(ctx))
	ulog, err := store.Load(ctx, u.ID())
	require.NoError(t, err)
	assert.Len(t, ulog.Records, 2)
}

func TestUnsignedSessionWritesNoCheckpoint(t *testing.T) {
	ctx := context.Background()
	root := bus.New()
	defer func() { _ = root.Dispose() }()
	s, err := live.NewManager(root.Context(), memory.New()).Create(ctx)
	require.NoError(t, err)
	_, err = s.Append(ctx, session.Event{Type: session.TypeTurnStart, Turn: 1, Data: session.TurnStart{}})
	require.NoError(t, err)
	_, err = s.Append(ctx, session.Event{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
	require.NoError(t, err)
	receipt, err := s.Checkpoint(ctx)
	require.NoError(t, err)
	assert.Nil(t, receipt)
	assert.Equal(t, 2, s.Len())
}
