package jsonl_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// The tests here share a directory with another process: this test
// binary run again as TestProcessChild, doing what JSONL_CHILD says.

// TestProcessChild is the other process; it is skipped in a normal run.
func TestProcessChild(t *testing.T) {
	what, dir := os.Getenv("JSONL_CHILD"), os.Getenv("JSONL_CHILD_DIR")
	if what == "" {
		t.Skip("run by the tests of processes sharing a store")
	}
	ctx := context.Background()
	s := open(t, dir)
	switch what {
	case "claim":
		// Claim, start, say which, then wait for a cancel (or a kill).
		c, err := s.Claim(ctx, "child")
		require.NoError(t, err)
		require.NoError(t, c.Start(ctx, 3))
		fmt.Printf("job=%s\n", c.Job().ID)
		select {
		case <-c.Cancelled():
		case <-time.After(time.Minute):
			t.Fatal("not cancelled")
		}
		require.NoError(t, c.Finish(ctx, session.Outcome{}))
		fmt.Println("cancelled")
	case "append":
		require.NoError(t, s.Append(ctx, "s1", 1, sessiontest.Turn(t, 0, 1)[1:]))
		fmt.Println("appended")
	}
}

// child starts the other process and returns its lines of output.
func child(t *testing.T, what, dir string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestProcessChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "JSONL_CHILD="+what, "JSONL_CHILD_DIR="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, lines
}

// line waits for the child's line starting with prefix.
func line(t *testing.T, lines <-chan string, prefix string) string {
	t.Helper()
	timeout := time.After(time.Minute)
	for {
		select {
		case l, ok := <-lines:
			require.True(t, ok, "the child ended before saying %q", prefix)
			if rest, ok := strings.CutPrefix(l, prefix); ok {
				return rest
			}
		case <-timeout:
			t.Fatalf("the child did not say %q", prefix)
		}
	}
}

func TestQueueJobOfAKilledProcessIsClaimedAgain(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	require.NoError(t, s.Create(ctx, info("s1")))
	require.NoError(t, s.Release("s1"))
	job, _, err := s.Enqueue(ctx, session.Job{Session: "s1", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)

	cmd, lines := child(t, "claim", dir)
	require.Equal(t, job.ID, line(t, lines, "job="))
	jobs, err := s.Jobs(ctx, "s1")
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	assert.Equal(t, session.JobRunning, jobs[0].State, "the other process runs it")
	assert.Equal(t, "child", jobs[0].Worker)
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	_, err = s.Claim(short, "w")
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded, "not claimable while its worker lives")

	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	long, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	c, err := s.Claim(long, "w")
	require.NoError(t, err, "claimable once its process is gone")
	assert.Equal(t, job.ID, c.Job().ID)
	assert.Equal(t, int64(3), c.Job().Base)
	assert.Equal(t, 2, c.Job().Attempts)
	require.NoError(t, c.Finish(ctx, session.Outcome{}))
}

func TestQueueCancelReachesAnotherProcess(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	require.NoError(t, s.Create(ctx, info("s1")))
	require.NoError(t, s.Release("s1"))
	_, _, err := s.Enqueue(ctx, session.Job{Session: "s1", Kind: "turn", Input: []byte(`{}`)})
	require.NoError(t, err)
	cmd, lines := child(t, "claim", dir)
	line(t, lines, "job=")
	n, err := s.Cancel(ctx, "s1")
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	line(t, lines, "cancelled")
	require.NoError(t, cmd.Wait())
	jobs, err := s.Jobs(ctx, "s1")
	require.NoError(t, err)
	assert.Empty(t, jobs, "the child finished it")
}

func TestFollowSeesAnotherProcessesAppends(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := open(t, dir)
	require.NoError(t, s.Create(ctx, info("s1")))
	recs := sessiontest.Turn(t, 0, 1)
	require.NoError(t, s.Append(ctx, "s1", 0, recs[:1]))
	fctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	got := 0
	for r, err := range s.Follow(fctx, "s1", 0) {
		require.NoError(t, err)
		require.Equal(t, string(recs[got].Bytes()), string(r.Bytes()))
		got++
		if got == 1 {
			// Read to the end: the rest comes from another process,
			// which wakes nothing here.
			require.NoError(t, s.Release("s1"))
			child(t, "append", dir)
		}
		if got == len(recs) {
			break
		}
	}
	require.Equal(t, len(recs), got, "ended by %v", fctx.Err())
}
