//go:build linux

package jsonl_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// TestAFullDiskDoesNotPoisonTheSession: an append that finds the disk
// full fails; the session still loads (what the file holds) while its
// writer is broken, and once space is back and the lease that was
// writing is released, the session takes appends again, without a new
// store.
func TestAFullDiskDoesNotPoisonTheSession(t *testing.T) {
	ctx := context.Background()
	disk := sessiontest.SmallDisk(t, "2m")
	s := open(t, filepath.Join(disk, "sessions"), jsonl.WithSyncInterval(0))
	require.NoError(t, s.Create(ctx, info("s1")))
	release, err := s.Lease(ctx, "s1", false)
	require.NoError(t, err)
	recs := sessiontest.Turn(t, 0, 1)
	require.NoError(t, s.Append(ctx, "s1", 0, recs))
	n := int64(len(recs))

	filler := sessiontest.FillDisk(t, disk)
	big, err := session.NewRecord(n, epoch, session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: strings.Repeat("x", 64<<10)}})
	require.NoError(t, err)
	require.ErrorIs(t, s.Append(ctx, "s1", n, []session.Record{big}), syscall.ENOSPC)

	log, err := s.Load(ctx, "s1")
	require.NoError(t, err, "a broken writer does not stop reads")
	assert.Len(t, log.Records, len(recs))

	require.NoError(t, os.Remove(filler))
	release()
	log, err = s.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Len(t, log.Records, len(recs))
	require.NoError(t, s.Append(ctx, "s1", n, []session.Record{big}), "appends go on once space is back")
	require.NoError(t, s.Flush(ctx, "s1"))
	log, err = s.Load(ctx, "s1")
	require.NoError(t, err)
	assert.Len(t, log.Records, len(recs)+1)
}
