//go:build unix

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/pgstore/pgtest"
)

// distinctiveDSN makes a user and a database whose names appear nowhere
// else on the cluster, and returns the DSN naming them and the strings a
// response must never carry.
func distinctiveDSN(t *testing.T, cluster *pgtest.Cluster) (string, []string) {
	t.Helper()
	const user, db, password = "opsleakuser", "opsleakdb", "opsleakpassword"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, cluster.DSN())
	require.NoError(t, err)
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `CREATE ROLE `+user+` LOGIN PASSWORD '`+password+`'`)
	require.NoError(t, err)
	_, err = conn.Exec(ctx, `CREATE DATABASE `+db+` OWNER `+user)
	require.NoError(t, err)
	u, err := url.Parse(cluster.DSN())
	require.NoError(t, err)
	u.User = url.UserPassword(user, password)
	u.Path = "/" + db
	return u.String(), []string{user, db, password, u.Hostname(), ":" + u.Port()}
}

// TestServeReadyzAndErrorsWhileThePostgresServerIsDown: with the
// database stopped, /readyz answers 503 unavailable and every route
// fails without a word of the DSN (user, database, host, port,
// password) in its body, while the log line of each failure, found by
// the request id the body and the X-Request-Id header give, has the
// whole error; every line of stderr is JSON (--log-format json). Once
// the database is back, /readyz answers 200 and the API works, without
// a restart.
func TestServeReadyzAndErrorsWhileThePostgresServerIsDown(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	dsn, secrets := distinctiveDSN(t, cluster)
	_, srv := newSlowModel(t, 0, 0)
	dir := t.TempDir()
	writePGConfig(t, dir, dsn, "ops", srv.URL, time.Second)
	s := serve(t, dir, "tok", "--workers", "0", "--log-format", "json", "--log-level", "info")
	ctx := context.Background()
	var created struct{ ID string }
	s.call(http.StatusCreated, "POST", "/v1/sessions", "", &created)
	id := created.ID
	s.call(http.StatusOK, "GET", "/readyz", "", nil)

	cluster.Stop()
	routes := []struct{ method, path, body string }{
		{"GET", "/readyz", ""},
		{"GET", "/v1/sessions", ""},
		{"POST", "/v1/sessions", ""},
		{"GET", "/v1/sessions/" + id, ""},
		{"POST", "/v1/sessions/" + id + "/turns", `{"prompt":"hi"}`},
		{"GET", "/v1/sessions/" + id + "/events", ""},
		{"POST", "/v1/sessions/" + id + "/approvals/c1", `{"allow":true}`},
		{"POST", "/v1/sessions/" + id + "/cancel", ""},
		{"GET", "/v1/sessions/" + id + "/verify", ""},
		{"GET", "/metrics", ""},
	}
	for _, r := range routes {
		resp := s.request(ctx, r.method, r.path, r.body, "Content-Type", "application/json")
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		for _, secret := range secrets {
			assert.NotContains(t, string(body), secret, "%s %s: %s", r.method, r.path, body)
		}
		if r.path == "/metrics" {
			continue
		}
		assert.GreaterOrEqual(t, resp.StatusCode, 500, "%s %s while the database is down: %s", r.method, r.path, body)
		var e struct{ Code, Message string }
		require.NoError(t, json.Unmarshal(body, &e), "%s", body)
		assert.Equal(t, "unavailable", e.Code, "%s %s: %s", r.method, r.path, body)
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode, "%s %s: %s", r.method, r.path, body)
		rid := resp.Header.Get("X-Request-Id")
		require.NotEmpty(t, rid)
		assert.Contains(t, e.Message, rid)
		// The log line of that request has the whole error.
		require.True(t, s.log.waitFor(`"request":"`+rid+`"`, 10*time.Second), "no log line for request %s", rid)
		line := lineWith(s.log.String(), `"request":"`+rid+`"`)
		assert.Contains(t, line, "pgstore", "the log says what failed")
		assert.NotContains(t, string(body), "pgstore", "the body does not")
	}

	cluster.Start()
	require.Eventually(t, func() bool {
		resp := s.request(ctx, "GET", "/readyz", "")
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, time.Minute, 100*time.Millisecond, "/readyz once the database is back")
	s.call(http.StatusOK, "GET", "/v1/sessions/"+id, "", nil)
	s.stop()

	sc := bufio.NewScanner(strings.NewReader(s.log.String()))
	n := 0
	for sc.Scan() {
		var v map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &v), "a line of stderr that is not JSON: %s", sc.Text())
		assert.Contains(t, v, "@message", sc.Text())
		n++
	}
	assert.Positive(t, n)
}

// lineWith returns the first line of text that holds s.
func lineWith(text, s string) string {
	for line := range strings.Lines(text) {
		if strings.Contains(line, s) {
			return line
		}
	}
	return ""
}

// TestWorkerServesMetrics: `vigil worker --metrics-addr` serves the
// metrics the API server serves (the queue-depth gauge, the jobs it ran,
// in seconds buckets) and the probes, without a token.
func TestWorkerServesMetrics(t *testing.T) {
	dsn, schema := pgtestDSN(t)
	_, srv := newSlowModel(t, 0, 0)
	dir := t.TempDir()
	writePGConfig(t, dir, dsn, schema, srv.URL, time.Second)
	s := serve(t, dir, "tok", "--workers", "0")
	var created struct{ ID string }
	s.call(http.StatusCreated, "POST", "/v1/sessions", "", &created)
	s.call(http.StatusAccepted, "POST", "/v1/sessions/"+created.ID+"/turns", `{"prompt":"hi"}`, nil)
	w := startWorker(t, dir, "w1", "--metrics-addr", "127.0.0.1:0")
	m := regexp.MustCompile(`metrics at (http://\S+)/metrics`).FindStringSubmatch(w.log.String())
	require.NotNil(t, m, "%s", w.log)
	get := func(path string) (int, string) {
		resp, err := http.Get(m[1] + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(body)
	}
	require.Eventually(t, func() bool {
		_, text := get("/metrics")
		return strings.Contains(text, `vigil_jobs_completed`) &&
			regexp.MustCompile(`vigil_queue_jobs\{[^}]*vigil_job_kind="turn",vigil_job_state="queued"[^}]*\} 0\n`).MatchString(text)
	}, time.Minute, 50*time.Millisecond, "the worker's metrics show the job it ran")
	status, text := get("/metrics")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, text, `vigil_job_duration_seconds_bucket{`)
	assert.Contains(t, text, fmt.Sprintf(`le="%g"`, 0.005))
	status, _ = get("/readyz")
	assert.Equal(t, http.StatusOK, status)
	status, _ = get("/healthz")
	assert.Equal(t, http.StatusOK, status)
	// The server's metrics count the same queue.
	status, text = func() (int, string) {
		resp := s.request(context.Background(), "GET", "/metrics", "")
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}()
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, text, `vigil_queue_jobs{`)
}

// TestWorkerHandsBackWhatOutlastsItsDrain: SIGTERM reaches a worker
// mid-turn and the turn outlasts --drain: the worker hands the job back
// and exits 1; another worker continues the turn at once, not once the
// lease expired (30 s here), and the session ends with the cut turn's
// continuation completed, its log verified.
func TestWorkerHandsBackWhatOutlastsItsDrain(t *testing.T) {
	dsn, schema := pgtestDSN(t)
	model, srv := newSlowModel(t, 1, 10*time.Millisecond)
	dir := t.TempDir()
	writePGConfig(t, dir, dsn, schema, srv.URL, 30*time.Second)
	s := serve(t, dir, "tok", "--workers", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var created struct{ ID string }
	s.call(http.StatusCreated, "POST", "/v1/sessions", "", &created)
	follow := followSSE(ctx, t, s, created.ID)
	w1 := startWorker(t, dir, "w1", "--drain", "200ms")
	model.holdNext()
	s.call(http.StatusAccepted, "POST", "/v1/sessions/"+created.ID+"/turns", `{"prompt":"outlasts the drain"}`, nil)
	select { // w1 asked the model: it is mid-turn
	case <-model.held:
	case <-time.After(time.Minute):
		t.Fatal("the turn did not reach the model")
	}
	require.NoError(t, w1.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-w1.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not exit after its drain")
	}
	assert.Equal(t, 1, exitStatus(w1.err), "a drain that runs out exits 1:\n%s", w1.log)
	assert.Contains(t, w1.log.String(), "handed back")
	model.let()

	start := time.Now()
	startWorker(t, dir, "w2")
	done := func(recs []session.Record) bool {
		n := len(recs)
		return n > 0 && recs[n-1].Type() == session.TypeTurnEnd && recs[n-1].Turn() == 2
	}
	require.True(t, follow.waitFor(20*time.Second, done), "w2 did not continue the turn within 20 s (the lease lives 30 s)")
	t.Logf("w2 continued the turn %s after it started", time.Since(start).Round(time.Millisecond))
	rep := checkSurvived(t, s, follow, []string{"outlasts the drain"})
	assert.Equal(t, 1, rep.continued)
}
