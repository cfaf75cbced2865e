package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunWaitsForTheTurnOfAnotherProcess: two real vigil processes on one
// JSONL store. While the first runs a turn (its model request is held
// open by the test's server), a second `run -s ID` is refused as busy,
// naming the first's pid, and touches nothing; a third with --wait says it
// waits, blocks until the first is done, then runs its turn; the log
// verifies and holds every turn, none repaired as interrupted.
func TestRunWaitsForTheTurnOfAnotherProcess(t *testing.T) {
	// Only a guard against a hang: nothing below waits on time.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	arrived := make(chan struct{}, 8)
	proceed := make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		arrived <- struct{}{}
		select {
		case <-proceed:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
	defer srv.Close()

	dir := t.TempDir()
	cfg := fmt.Sprintf(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/openai
    config: { base_url: %q, model: m }
  - name: agent
    config: { model: m, max_steps: 2 }
  - name: invariants
`, srv.URL+"/v1")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))
	vigil := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "vigil", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "NO_COLOR=1", "VIGIL_SHOW_EXIT=")
		return cmd
	}
	wait := func(ch chan struct{}, what string) {
		t.Helper()
		select {
		case <-ch:
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		}
	}

	// A session with one turn.
	proceed <- struct{}{}
	out, err := vigil("run", "first").CombinedOutput()
	require.NoError(t, err, "%s", out)
	wait(arrived, "the first turn's request")
	id := sessionIDIn(t, string(out))
	logPath := filepath.Join(dir, "sessions", id+".jsonl")

	// The holder: its request is held until the test lets it go.
	var holderErr bytes.Buffer
	holder := vigil("run", "-s", id, "second")
	holder.Stderr = &holderErr
	require.NoError(t, holder.Start())
	wait(arrived, "the holder's request")

	// Without --wait: refused as busy, naming the holder.
	out, err = vigil("run", "-s", id, "third").CombinedOutput()
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "%s", out)
	assert.Equal(t, 1, exit.ExitCode())
	assert.Contains(t, string(out), "locked by another writer")
	assert.Contains(t, string(out), fmt.Sprintf("held by pid %d on ", holder.Process.Pid))
	assert.Contains(t, string(out), "--wait")
	assert.NotContains(t, string(out), "repair")
	// (The holder's own events may reach the file meanwhile: compare
	// what the refused run would have written.)
	after, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.NotContains(t, string(after), `"third"`, "the refused run wrote nothing")
	assert.NotContains(t, string(after), `"interrupted"`, "nor repaired the holder's turn")

	// With --wait: it says so, naming the holder, and blocks.
	waiter := vigil("run", "-s", id, "--wait", "fourth")
	stderr, err := waiter.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, waiter.Start())
	waiting := make(chan struct{})
	var waiterErr strings.Builder
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			waiterErr.WriteString(sc.Text() + "\n")
			if !said && strings.Contains(sc.Text(), "waiting for session "+id) &&
				strings.Contains(sc.Text(), fmt.Sprintf("held by pid %d", holder.Process.Pid)) {
				said = true
				close(waiting)
			}
		}
	}()
	wait(waiting, "the waiter's progress line")

	// The holder ends its turn and lets go; then the waiter runs.
	proceed <- struct{}{}
	require.NoError(t, holder.Wait(), "%s", holderErr.String())
	wait(arrived, "the waiter's request, once the holder is done")
	proceed <- struct{}{}
	<-drained
	require.NoError(t, waiter.Wait(), "%s", waiterErr.String())
	assert.NotContains(t, waiterErr.String(), "interrupted")
	select {
	case <-arrived:
		t.Fatal("a request nobody should have sent")
	default:
	}

	out, err = vigil("verify", logPath).CombinedOutput()
	require.NoError(t, err, "%s", out)
	log, err := os.ReadFile(logPath)
	require.NoError(t, err)
	assert.Equal(t, 3, strings.Count(string(log), `"reason":"completed"`), "%s", log)
	assert.NotContains(t, string(log), `"interrupted"`)
	assert.NoFileExists(t, filepath.Join(dir, "sessions", id+".lock"), "the last holder removed its record")
}
