//go:build linux

package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	jsonlstore "github.com/vigil-run/vigil/plugins/store/jsonl"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// TestReadsRecoverAfterAFullDisk: the disk of a JSONL store fills up
// while the server runs, and a turn's write fails; once space is back,
// the session reads again (get, list, events, verify) and takes turns
// again, without a restart.
func TestReadsRecoverAfterAFullDisk(t *testing.T) {
	disk := sessiontest.SmallDisk(t, "4m")
	src := vigil.Compose(
		vigil.Plugin("store/jsonl", &jsonlstore.Config{Dir: filepath.Join(disk, "sessions")}),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "ok"}}, Repeat: true}),
		vigil.Plugin("agent", agentloop.Config{System: "Be brief."}),
	)
	a := newAPI(t, src, server.Options{})
	id := a.create()
	// Queued while there is space; run once there is none: its prompt
	// (64 KiB) cannot be logged.
	big := strings.Repeat("x", 64<<10)
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"`+big+`"}`, nil)
	filler := sessiontest.FillDisk(t, disk)
	// Room for the queue's small writes, not for the prompt.
	fi, err := os.Stat(filler)
	require.NoError(t, err)
	require.NoError(t, os.Truncate(filler, fi.Size()-16<<10))
	failed := make(chan error, 1)
	a.opts = vigil.WorkOptions{OnJob: func(_ session.Job, _ *vigil.Result, err error) { failed <- err }}
	a.startWorker()
	select {
	case err := <-failed:
		require.ErrorIs(t, err, syscall.ENOSPC)
	case <-time.After(30 * time.Second):
		t.Fatal("the turn did not end")
	}
	a.stopWorker()

	require.NoError(t, os.Remove(filler))
	reads := []string{"/v1/sessions/" + id, "/v1/sessions", "/v1/sessions/" + id + "/events", "/v1/sessions/" + id + "/verify", "/readyz"}
	for _, path := range reads {
		status, body := a.do("GET", path, "")
		assert.Equal(t, http.StatusOK, status, "GET %s once space is back: %.300s", path, body)
	}
	a.opts = vigil.WorkOptions{}
	a.startWorker()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", `{"prompt":"again"}`, nil)
	recs := a.until(id, -1, func(r session.Record) bool {
		if r.Type() != session.TypeUserMessage {
			return false
		}
		m, err := session.DecodeData[session.UserMessage](r)
		return err == nil && m.Content == "again"
	})
	assert.NotEmpty(t, recs)
	a.create()
}
