package replay_test

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/memory"
)

// TestRunReproducesEveryRequestWithRecordedToolResults: the tools of the
// rerun answer from the recording, so the requests re-derive identically
// even when the folder the tools read has changed since.
func TestRunReproducesEveryRequestWithRecordedToolResults(t *testing.T) {
	dir := folder(t)
	orig := record(t, dir)
	require.NoError(t, os.Mkdir(dir+"/added-later", 0o755))

	w := newWorld(t, memory.New(), t.TempDir())
	rr, err := replay.Run(context.Background(), w.c, w.mgr, orig.Records())
	require.NoError(t, err)
	assert.Empty(t, rr.Errors)
	assert.True(t, rr.Identical(), "%+v", rr.Steps)
	assert.Len(t, rr.Steps, 6)
	assert.Equal(t, surface(t, orig.Records()), surface(t, rr.Session.Records()))
}

// TestRunReportsARequestThatNoLongerReDerives: a user message edited in
// the log changes the request its step sends.
func TestRunReportsARequestThatNoLongerReDerives(t *testing.T) {
	orig := record(t, folder(t))
	var edited []*session.Record
	for _, r := range orig.Records() {
		if r.Type() == session.TypeUserMessage && len(edited) < 3 {
			ev := session.Event{Type: r.Type(), Turn: r.Turn(), Data: json.RawMessage(`{"content":"something else"}`)}
			var err error
			r, err = session.NewRecord(r.Seq(), r.Time(), ev)
			require.NoError(t, err)
		}
		edited = append(edited, r)
	}
	w := newWorld(t, memory.New(), t.TempDir())
	rr, err := replay.Run(context.Background(), w.c, w.mgr, edited)
	require.NoError(t, err)
	assert.False(t, rr.Identical())
	assert.False(t, rr.Steps[0].Same)
	assert.NotEqual(t, rr.Steps[0].Recorded, rr.Steps[0].Replayed)
}

func TestRunRefusesALogWithoutHeader(t *testing.T) {
	w := newWorld(t, memory.New(), t.TempDir())
	_, err := replay.Run(context.Background(), w.c, w.mgr, nil)
	require.ErrorContains(t, err, "no request/header")
}
