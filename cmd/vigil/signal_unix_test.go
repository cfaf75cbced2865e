//go:build unix

package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
)

// holdingModel is an OpenAI-compatible server whose first answer streams
// its start and then holds the response open until the client goes away
// (a model still thinking when the signal comes); the later ones answer
// "Done.".
func holdingModel(t *testing.T) (url string, streaming <-chan struct{}) {
	started := make(chan struct{}, 1)
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		if calls.Add(1) > 1 {
			fmt.Fprint(w, `data: {"id":"c2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Done."}}]}`+"\n\n")
			fmt.Fprint(w, `data: {"id":"c2","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`+"\n\n")
			fmt.Fprint(w, "data: [DONE]\n\n")
			return
		}
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Thinking"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case started <- struct{}{}:
		default:
		}
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", started
}

// TestSignalsEndTheTurnAborted runs the real binary on a turn whose model
// never finishes and stops it with each signal a user or a terminal
// sends: the process exits 130 for Ctrl-C (SIGINT) and 1 for the others,
// the turn is closed with reason aborted, everything delivered is in the
// file, `vigil verify` passes, and `vigil run -s ID --continue` carries
// the turn on. Before, SIGHUP killed the process (exit 129) with the turn
// open, and Ctrl-C exited 1 leaving a turn --continue refused.
func TestSignalsEndTheTurnAborted(t *testing.T) {
	bin := buildVigil(t)
	exits := map[syscall.Signal]int{syscall.SIGINT: exitInterrupted, syscall.SIGTERM: exitFailed, syscall.SIGHUP: exitFailed}
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			url, streaming := holdingModel(t)
			dir := t.TempDir()
			cfg := fmt.Sprintf(`plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/openai
    config: { base_url: %q, api_key: "k", model: "m" }
  - name: agent
  - name: invariants
    config: { mode: strict }
`, url)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))

			stdout, stderr := &lineBuffer{}, &lineBuffer{}
			cmd := exec.Command(bin, "run", "hello")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			cmd.Stdout, cmd.Stderr = stdout, stderr
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()

			select {
			case <-streaming:
			case err := <-exited:
				t.Fatalf("vigil exited before the model answered: %v\n%s", err, stderr.String())
			}
			// The chunk is printed after it was logged.
			stdout.waitFor(t, "Thinking")
			require.NoError(t, cmd.Process.Signal(sig))
			var err error
			select {
			case err = <-exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("vigil did not stop after %v:\n%s", sig, stderr.String())
			}
			var ee *exec.ExitError
			require.True(t, errors.As(err, &ee), "exit: %v\n%s", err, stderr.String())
			assert.Equal(t, exits[sig], ee.ExitCode(), "%s\n%s", ee, stderr.String())
			assert.Contains(t, stderr.String(), "signal received")

			st, err := jsonl.Open(filepath.Join(dir, "sessions"))
			require.NoError(t, err)
			defer st.Close()
			infos, err := st.List(context.Background())
			require.NoError(t, err)
			require.Len(t, infos, 1)
			log, err := st.Load(context.Background(), infos[0].ID)
			require.NoError(t, err)
			recs := log.Records
			require.NotEmpty(t, recs)
			last := recs[len(recs)-1]
			require.Equal(t, session.TypeTurnEnd, last.Type(), "the turn was left open")
			end, err := session.DecodeData[session.TurnEnd](last)
			require.NoError(t, err)
			assert.Equal(t, session.ReasonAborted, end.Reason)
			assert.Contains(t, end.Error, "signal")
			var chunks int
			for _, r := range recs {
				if r.Type() == session.TypeAssistantChunk {
					chunks++
				}
			}
			assert.Equal(t, 1, chunks, "the chunk delivered before the signal is kept")

			verify := exec.Command(bin, "verify", infos[0].ID)
			verify.Dir = dir
			out, err := verify.CombinedOutput()
			assert.NoError(t, err, "vigil verify:\n%s", out)

			if sig == syscall.SIGINT {
				assert.Contains(t, stderr.String(), "vigil run -s "+infos[0].ID+" --continue carries the turn on")
			}
			cont := exec.Command(bin, "run", "-s", infos[0].ID, "--continue")
			cont.Dir = dir
			cont.Env = append(os.Environ(), "NO_COLOR=1")
			contOut, contErr := &lineBuffer{}, &lineBuffer{}
			cont.Stdout, cont.Stderr = contOut, contErr
			require.NoError(t, cont.Run(), "vigil run --continue:\n%s", contErr.String())
			assert.Equal(t, "Done.\n", contOut.String())
		})
	}
}

// TestSignalsStopAnIdleChat: a chat waiting for its next line on a stdin
// that stays open (a terminal) stops on each signal, instead of waiting
// for input forever.
func TestSignalsStopAnIdleChat(t *testing.T) {
	bin := buildVigil(t)
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(chatConfig), 0o644))
			stderr := &lineBuffer{}
			cmd := exec.Command(bin, "chat", "--no-watch")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "NO_COLOR=1")
			cmd.Stdout, cmd.Stderr = &lineBuffer{}, stderr
			stdin, err := cmd.StdinPipe()
			require.NoError(t, err)
			defer stdin.Close()
			require.NoError(t, cmd.Start())
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()

			stderr.waitFor(t, "type a message")
			require.NoError(t, cmd.Process.Signal(sig))
			select {
			case err = <-exited:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-exited
				t.Fatalf("an idle chat did not stop after %v:\n%s", sig, stderr.String())
			}
			assert.NoError(t, err, stderr.String())
		})
	}
}
