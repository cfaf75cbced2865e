package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	_ "github.com/vigil-run/vigil/plugins/store/memory" // store/memory, by name
	_ "github.com/vigil-run/vigil/plugins/tools/calc"   // tools/calc, by name
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// api is a server over a real runtime (in-memory store, scripted model),
// with a worker when started.
type api struct {
	t    *testing.T
	rt   *vigil.Runtime
	srv  *httptest.Server
	auth string
	stop context.CancelFunc
	done chan struct{}
	// opts are the worker's options, but its name and concurrency.
	opts vigil.WorkOptions
}

// composition is an agent on the in-memory store with the model script
// given, calc as its tool and, with ask, a policy that asks before calc.
func composition(ask bool, script ...scripted.Reply) vigil.Source {
	entries := []config.Entry{
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: script, Repeat: true}),
		vigil.Plugin("tools/calc", nil),
	}
	if ask {
		entries = append(entries, vigil.Plugin("approvals", approvals.Config{Rules: []approvals.Rule{{Tool: "calc", Action: "ask", Reason: "arithmetic needs a yes"}}}))
	}
	entries = append(entries, vigil.Plugin("agent", agentloop.Config{System: "Be brief."}),
		vigil.Plugin("invariants", invariants.Config{Mode: "strict"}))
	return vigil.Compose(entries...)
}

func newAPI(t *testing.T, src vigil.Source, o server.Options) *api {
	t.Helper()
	rt, err := vigil.Open(context.Background(), src)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	s, err := server.New(rt, o)
	require.NoError(t, err)
	a := &api{t: t, rt: rt, srv: httptest.NewServer(s)}
	t.Cleanup(a.srv.Close)
	t.Cleanup(a.stopWorker)
	return a
}

// startWorker runs a worker in the test's process until the test ends.
func (a *api) startWorker() {
	ctx, cancel := context.WithCancel(context.Background())
	a.stop, a.done = cancel, make(chan struct{})
	go func() {
		defer close(a.done)
		o := a.opts
		o.Worker, o.Concurrency = "test", 2
		_ = a.rt.Work(ctx, o)
	}()
}

func (a *api) stopWorker() {
	if a.stop != nil {
		a.stop()
		<-a.done
		a.stop = nil
	}
}

// do sends a request and returns the status and body.
func (a *api) do(method, path, body string, header ...string) (int, []byte) {
	a.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.srv.URL+path, rd)
	require.NoError(a.t, err)
	if a.auth != "" {
		req.Header.Set("Authorization", "Bearer "+a.auth)
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(header); i += 2 {
		if header[i] == "Host" {
			req.Host = header[i+1]
		} else {
			req.Header.Set(header[i], header[i+1])
		}
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return resp.StatusCode, data
}

// json sends a request and decodes its body into out, requiring status.
func (a *api) json(status int, method, path, body string, out any) {
	a.t.Helper()
	got, data := a.do(method, path, body)
	require.Equal(a.t, status, got, "%s %s: %s", method, path, data)
	if out != nil {
		// Decode into a zero value: fields the body omits stay empty.
		v := reflect.ValueOf(out).Elem()
		v.Set(reflect.Zero(v.Type()))
		require.NoError(a.t, json.Unmarshal(data, out), "%s", data)
	}
}

func (a *api) create() string {
	a.t.Helper()
	var sum server.Summary
	a.json(http.StatusCreated, "POST", "/v1/sessions", "", &sum)
	require.NotEmpty(a.t, sum.ID)
	return sum.ID
}

// until follows session id's events (JSONL, follow=true) after seq after
// and returns them up to the first one done accepts.
func (a *api) until(id string, after int64, done func(session.Record) bool) []session.Record {
	a.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", a.srv.URL+"/v1/sessions/"+id+"/events?follow=true&after="+itoa(after), nil)
	require.NoError(a.t, err)
	if a.auth != "" {
		req.Header.Set("Authorization", "Bearer "+a.auth)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	require.Equal(a.t, http.StatusOK, resp.StatusCode)
	var out []session.Record
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		rec, err := session.DecodeRecord(bytes.Clone(sc.Bytes()))
		require.NoError(a.t, err)
		out = append(out, rec)
		if done(rec) {
			return out
		}
	}
	a.t.Fatalf("the stream of %s ended before the awaited event: %v (%d events)", id, sc.Err(), len(out))
	return nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// turnEnd reports whether rec ends a turn.
func turnEnd(rec session.Record) bool { return rec.Type() == session.TypeTurnEnd }

// suspends reports whether rec asks for an approval.
func suspends(rec session.Record) bool { return rec.Type() == session.TypeApprovalRequest }
