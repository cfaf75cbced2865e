package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// env is a bus with a memory store, and the invariants plugin mounted in
// strict mode so that every test also proves the loop keeps the log and
// request rules.
type env struct {
	t    testing.TB
	root *bus.Root
	c    *bus.Context
	mgr  *live.Manager
}

func newEnv(t testing.TB) *env { return newEnvWith(t, memory.New()) }

func newEnvWith(t testing.TB, store session.Store) *env {
	t.Helper()
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	c := root.Context()
	_, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	require.NoError(t, err)
	var n atomic.Int64
	clock := func() time.Time {
		return time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC).Add(time.Duration(n.Add(1)) * time.Millisecond)
	}
	mgr := live.NewManager(c, store, live.WithClock(clock))
	return &env{t: t, root: root, c: c, mgr: mgr}
}

func (e *env) session() *live.Session {
	e.t.Helper()
	s, err := e.mgr.Create(context.Background())
	require.NoError(e.t, err)
	return s
}

// script returns a scripted provider playing replies.
func script(t testing.TB, replies ...scripted.Reply) *scripted.Provider {
	t.Helper()
	p, err := scripted.New(scripted.Config{Script: replies})
	require.NoError(t, err)
	return p
}

// workspace makes a directory with a few entries and returns fs tools
// confined to it.
func workspace(t testing.TB) (string, []agentloop.Tool) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module x\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "docs"), 0o755))
	f, err := fstools.Open(dir, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return dir, f.Tools()
}

func types(recs []session.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Type()
	}
	return out
}

func ofType(recs []session.Record, typ string) []session.Record {
	var out []session.Record
	for _, r := range recs {
		if r.Type() == typ {
			out = append(out, r)
		}
	}
	return out
}

func decode[T any](t testing.TB, r session.Record) T {
	t.Helper()
	v, err := session.DecodeData[T](r)
	require.NoError(t, err)
	return v
}

// recorder is a provider that records the requests it receives and
// answers each with the next of its replies (a text reply when they run
// out).
type recorder struct {
	mu      sync.Mutex
	reqs    []*agentloop.Request
	replies []func(ctx context.Context) (agentloop.Stream, error)
}

func (r *recorder) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	var next func(ctx context.Context) (agentloop.Stream, error)
	if len(r.replies) > 0 {
		next, r.replies = r.replies[0], r.replies[1:]
	}
	r.mu.Unlock()
	if next != nil {
		return next(ctx)
	}
	return textStream("ok"), nil
}

func (r *recorder) requests() []*agentloop.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*agentloop.Request(nil), r.reqs...)
}

func textStream(parts ...string) agentloop.Stream {
	return func(yield func(agentloop.Chunk, error) bool) {
		for _, p := range parts {
			if !yield(agentloop.Chunk{Text: p}, nil) {
				return
			}
		}
		yield(agentloop.Chunk{Finish: session.FinishStop}, nil)
	}
}

// funcTool is a tool made of a function.
type funcTool struct {
	name       string
	safe       bool
	idempotent bool
	fn         func(ctx context.Context, args json.RawMessage) (string, error)
}

func (f funcTool) Spec() session.ToolSpec {
	return session.ToolSpec{Name: f.name, Description: "test tool " + f.name, Parameters: json.RawMessage(`{"type":"object"}`), Idempotent: f.idempotent}
}
func (f funcTool) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	return f.fn(ctx, args)
}
func (f funcTool) ConcurrencySafe() bool { return f.safe }

var errBoom = errors.New("boom")

// TestInvariantsAreMountedInTestEnv guards the premise of the other
// tests: a rule violation is refused in their environment.
func TestInvariantsAreMountedInTestEnv(t *testing.T) {
	e := newEnv(t)
	err := agentloop.StatusEvent.Emit(context.Background(), e.c, agentloop.StatusChange{Agent: "x", From: agentloop.StatusDisposed, To: agentloop.StatusIdle})
	require.Error(t, err)
	sess := e.session()
	_, err = sess.Append(context.Background(), session.Event{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonCompleted}})
	require.Error(t, err, "turn/end without turn/start")
}
