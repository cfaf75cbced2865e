package jsonl_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// seed creates sessions s0, s1, … s(n-1), each with one record.
func seed(t *testing.T, s *jsonl.Store, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		id := fmt.Sprintf("s%d", i)
		require.NoError(t, s.Create(ctx, info(id)))
		require.NoError(t, s.Append(ctx, id, 0, sessiontest.Turn(t, 0, 1)[:1]))
	}
}

// following starts a follower of each of the n sessions seed made and
// returns once every one has its first record and waits inside the loop's
// body; release lets them go and waits for them to end.
func following(t *testing.T, s *jsonl.Store, n int) (release func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, n)
	hold := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			first := true
			for _, err := range s.Follow(ctx, fmt.Sprintf("s%d", i), 0) {
				if first {
					got <- err
					first = false
					<-hold
				}
				if err != nil {
					return
				}
			}
		})
	}
	for range n {
		require.NoError(t, <-got)
	}
	return func() {
		close(hold)
		cancel()
		wg.Wait()
	}
}

// A waiting follower must not hold its file open: a server streaming to
// thousands of idle sessions would run out of file descriptors.
func TestWaitingFollowersHoldNoFile(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts /proc/self/fd")
	}
	openFiles := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		require.NoError(t, err)
		return len(entries)
	}
	s := open(t, t.TempDir())
	const n = 40
	seed(t, s, n)
	before := openFiles()
	release := following(t, s, n)
	defer release()
	assert.Less(t, openFiles()-before, n/4, "%d followers waiting", n)
}

// The followers of a directory share one poller (for other processes'
// appends), which stops with the last of them.
func TestFollowersShareOnePoller(t *testing.T) {
	s := open(t, t.TempDir())
	seed(t, s, 25)
	release := following(t, s, 25)
	started, running := jsonl.Pollers(s)
	assert.Equal(t, 1, started)
	assert.True(t, running)
	release()
	_, running = jsonl.Pollers(s)
	assert.False(t, running, "no follower left")
}
