package jsonl_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// TestSuspensionPastACheckpointLetsTheFileGo: a turn suspended on an
// approval, with the signed checkpoint (an ignorable record) after its
// approval/request, is suspended all the same: the writer lets the file
// go, so another process can log the decision.
func TestSuspensionPastACheckpointLetsTheFileGo(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	require.NoError(t, a.Create(ctx, info("s1")))
	recs := sessiontest.Turn(t, 0, 1)[:9] // to the tool/call
	at := recs[8].Time()
	req, err := session.NewRecord(9, at, session.Event{Type: session.TypeApprovalRequest, Turn: 1, Step: 1, Data: session.ApprovalRequest{ID: "call_1"}})
	require.NoError(t, err)
	cp, err := session.NewRecord(10, at, session.CheckpointEvent([]byte("a note\n")))
	require.NoError(t, err)
	require.NoError(t, a.Append(ctx, "s1", 0, append(recs, req, cp)))
	require.NoError(t, a.Flush(ctx, "s1"))

	dec, err := session.NewRecord(11, at, session.Event{Type: session.TypeApprovalDecision, Turn: 1, Step: 1, Data: session.ApprovalDecision{ID: "call_1", Allow: true, By: "ann"}})
	require.NoError(t, err)
	require.NoError(t, b.Append(ctx, "s1", 11, []session.Record{dec}), "the suspended turn's file is free")
}
