package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// TestServeContinuesATurnCutByAKill: `vigil serve` on the JSONL default
// is killed (SIGKILL) while its worker is mid-turn, the model still
// streaming, with a second turn queued behind. Started again on the same
// folder, it repairs the cut turn and continues it (a continuation turn),
// then runs the queued turn: an accepted turn survives the restart. A
// client that streamed the session across the kill, resuming with
// Last-Event-ID on the new process, saw exactly the stored log.
func TestServeContinuesATurnCutByAKill(t *testing.T) {
	model, srv := newGatedModel(t, "openai")
	dir := t.TempDir()
	cfg := fmt.Sprintf(`plugins:
  - { name: store/jsonl, config: { dir: sessions } }
  - { name: provider/openai, config: { base_url: "%s/v1", api_key: k, model: m } }
  - { name: agent, config: { model: m, max_steps: 4 } }
  - { name: tools/calc }
  - { name: invariants, config: { mode: strict } }
`, srv.URL)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))
	s := serve(t, dir, "tok")

	var created struct{ ID string }
	s.call(http.StatusCreated, "POST", "/v1/sessions", "", &created)
	id := created.ID
	s.call(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"what is 6*7?"}`, nil)
	s.call(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"and now?"}`, nil)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lines []string
	stream := s.events(ctx, id, "")
	_, lastID := stream.until(t, &lines, session.TypeAssistantChunk)
	require.NoError(t, s.cmd.Process.Kill())
	_ = s.cmd.Wait()
	stream.resp.Body.Close()

	s = serve(t, dir, "tok")
	stream = s.events(ctx, id, lastID)
	defer stream.resp.Body.Close()
	model.open()
	var ends []session.TurnEnd
	var continues []int
	var prompts []string
	for len(ends) < 3 {
		rec, _ := stream.until(t, &lines, session.TypeTurnEnd)
		te, err := session.DecodeData[session.TurnEnd](rec)
		require.NoError(t, err)
		ends = append(ends, te)
	}
	for _, l := range lines {
		rec, err := session.DecodeRecord([]byte(l))
		require.NoError(t, err)
		switch rec.Type() {
		case session.TypeTurnStart:
			ts, err := session.DecodeData[session.TurnStart](rec)
			require.NoError(t, err)
			continues = append(continues, ts.Continues)
		case session.TypeUserMessage:
			m, err := session.DecodeData[session.UserMessage](rec)
			require.NoError(t, err)
			prompts = append(prompts, m.Content)
		}
	}
	// Turn 1 cut by the kill, turn 2 its continuation, turn 3 the queued
	// prompt.
	assert.Equal(t, session.ReasonInterrupted, ends[0].Reason)
	assert.Equal(t, session.ReasonCompleted, ends[1].Reason)
	assert.Equal(t, session.ReasonCompleted, ends[2].Reason)
	assert.Equal(t, []int{0, 1, 0}, continues)
	assert.Equal(t, []string{"what is 6*7?", "and now?"}, prompts)

	resp := s.request(ctx, "GET", "/v1/sessions/"+id+"/events", "")
	stored, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.NoError(t, err)
	assert.Equal(t, string(stored), strings.Join(lines, "\n")+"\n", "the stream across the kill is the stored log")
	var rep struct {
		OK         bool
		Violations []any
	}
	s.call(http.StatusOK, "GET", "/v1/sessions/"+id+"/verify", "", &rep)
	assert.True(t, rep.OK, "%v", rep.Violations)
	s.stop()
}

// TestServeDrainsOnSIGTERM: SIGTERM mid-turn lets the running turn
// finish before vigil serve exits 0; when the turn outlasts --drain, the
// process exits 1 without ending it, and the next start continues it.
func TestServeDrainsOnSIGTERM(t *testing.T) {
	for _, c := range []struct {
		name   string
		finish bool
	}{{"the turn finishes", true}, {"the drain runs out", false}} {
		t.Run(c.name, func(t *testing.T) {
			model, srv := newGatedModel(t, "openai")
			dir := t.TempDir()
			cfg := fmt.Sprintf(`plugins:
  - { name: store/jsonl, config: { dir: sessions } }
  - { name: provider/openai, config: { base_url: "%s/v1", api_key: k, model: m } }
  - { name: agent, config: { model: m, max_steps: 4 } }
  - { name: tools/calc }
`, srv.URL)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))
			s := serve(t, dir, "tok", "--drain", "1s")
			var created struct{ ID string }
			s.call(http.StatusCreated, "POST", "/v1/sessions", "", &created)
			id := created.ID
			s.call(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"what is 6*7?"}`, nil)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var lines []string
			stream := s.events(ctx, id, "")
			stream.until(t, &lines, session.TypeAssistantChunk)
			stream.resp.Body.Close()

			require.NoError(t, s.cmd.Process.Signal(syscall.SIGTERM))
			if c.finish {
				model.open()
				require.NoError(t, s.cmd.Wait(), "the drained server exits 0")
			} else {
				err := s.cmd.Wait()
				require.Equal(t, 1, exitStatus(err), "a drain that runs out exits 1")
				model.open()
			}
			s = serve(t, dir, "tok")
			stream = s.events(ctx, id, "")
			defer stream.resp.Body.Close()
			var reasons []string
			want := 1
			if !c.finish {
				want = 2 // the cut turn, then its continuation
			}
			lines = nil
			for len(reasons) < want {
				rec, _ := stream.until(t, &lines, session.TypeTurnEnd)
				te, err := session.DecodeData[session.TurnEnd](rec)
				require.NoError(t, err)
				reasons = append(reasons, te.Reason)
			}
			if c.finish {
				assert.Equal(t, []string{session.ReasonCompleted}, reasons)
			} else {
				assert.Equal(t, []string{session.ReasonInterrupted, session.ReasonCompleted}, reasons)
			}
			s.stop()
		})
	}
}
