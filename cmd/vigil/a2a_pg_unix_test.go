//go:build unix

package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/a2aproject/a2a-go/a2a"
	"github.com/a2aproject/a2a-go/a2aclient"
	"github.com/a2aproject/a2a-go/a2aclient/agentcard"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentsrv"
)

// bearerRT sets a bearer token on every request.
type bearerRT struct{ token string }

func (b bearerRT) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// a2aClientOf connects a2a-go's client to the agent of s, through its
// card.
func a2aClientOf(t *testing.T, s *served) *a2aclient.Client {
	t.Helper()
	hc := &http.Client{Transport: bearerRT{s.token}}
	card, err := agentcard.NewResolver(hc).Resolve(context.Background(), s.base+"/a2a/agent")
	require.NoError(t, err)
	c, err := a2aclient.NewFromCard(context.Background(), card, a2aclient.WithJSONRPCTransport(hc))
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Destroy() })
	return c
}

// TestA2ATaskSurvivesAKilledWorker: `vigil serve --workers 0` and a
// `vigil worker` on store/postgres with signed sessions. a2a-go's client
// streams a task; once its first chunk came, the worker running it is
// killed (SIGKILL) and another started: the stream goes on and the task
// completes, its turn continued by the new worker. The server is then
// restarted and the task read again from the store, and its receipt
// verifies with vigil verify --key --anchor.
func TestA2ATaskSurvivesAKilledWorker(t *testing.T) {
	dsn, schema := pgtestDSN(t)
	_, model := newSlowModel(t, 3, 80*time.Millisecond)
	dir := t.TempDir()
	writePGConfig(t, dir, dsn, schema, model.URL, time.Second)
	cfg := filepath.Join(dir, "plugins.yaml")
	keyFile := filepath.Join(dir, "key")
	code, vkey, stderr := runVigil(t, "keys", "generate", "a2a-test", "--out", keyFile)
	require.Equal(t, 0, code, stderr)
	vkey = strings.TrimSpace(vkey)
	t.Setenv("VIGIL_SIGNING_KEY_FILE", keyFile)

	s := serve(t, dir, "tok", "--workers", "0")
	first := startWorker(t, dir, "w1")
	c := a2aClientOf(t, s)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	var task a2a.TaskID
	var final *a2a.TaskStatusUpdateEvent
	killed := false
	for ev, err := range c.SendStreamingMessage(ctx, &a2a.MessageSendParams{Message: a2a.NewMessage(a2a.MessageRoleUser, a2a.TextPart{Text: "count"})}) {
		require.NoError(t, err)
		switch ev := ev.(type) {
		case *a2a.Task:
			task = ev.ID
		case *a2a.TaskArtifactUpdateEvent:
			if ev.Append && !killed {
				first.kill(t)
				startWorker(t, dir, "w2")
				killed = true
			}
		case *a2a.TaskStatusUpdateEvent:
			if ev.Final {
				final = ev
			}
		}
	}
	require.True(t, killed, "a chunk streamed before the end")
	require.NotNil(t, final, "the stream ended with a final status")
	require.Equal(t, a2a.TaskStateCompleted, final.Status.State, "%+v", final.Status.Message)

	s.stop()
	s = serve(t, dir, "tok", "--workers", "0")
	got, err := a2aClientOf(t, s).GetTask(ctx, &a2a.TaskQueryParams{ID: task})
	require.NoError(t, err)
	require.Equal(t, a2a.TaskStateCompleted, got.Status.State, "the task is read from the store after a restart")
	raw, err := json.Marshal(got.Metadata[agentsrv.MetaKey])
	require.NoError(t, err)
	var r agentsrv.Receipt
	require.NoError(t, json.Unmarshal(raw, &r))
	assert.Greater(t, r.Turn, 1, "the receipt names the continuation that finished the turn")
	require.NotEmpty(t, r.Checkpoint, "signed sessions: the receipt carries the turn's checkpoint")
	rawFinal, err := json.Marshal(final.Metadata[agentsrv.MetaKey])
	require.NoError(t, err)
	assert.JSONEq(t, string(raw), string(rawFinal), "the stream's receipt is the task's")

	anchor := filepath.Join(dir, "anchor")
	require.NoError(t, os.WriteFile(anchor, []byte(r.Checkpoint), 0o644))
	code, out, stderr := runVigil(t, "verify", "-c", cfg, "--key", vkey, "--anchor", anchor, r.Session)
	assert.Equal(t, 0, code, "%s\n%s", out, stderr)
}
