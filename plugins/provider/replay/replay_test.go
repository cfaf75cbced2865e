package replay_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

var prompts = []string{"what is here?", "look again", "once more"}

type world struct {
	root  *bus.Root
	c     *bus.Context
	mgr   *live.Manager
	tools []agentloop.Tool
	logs  *bytes.Buffer
}

// newWorld is a bus with the invariants plugin in strict mode, a store,
// and fs tools over a fixed folder.
func newWorld(t *testing.T, store session.Store, dir string) *world {
	t.Helper()
	logs := &bytes.Buffer{}
	root := bus.New(bus.WithLogger(hclog.New(&hclog.LoggerOptions{Output: &syncWriter{w: logs}, Level: hclog.Warn})))
	t.Cleanup(func() { _ = root.Dispose() })
	c := root.Context()
	_, err := c.Plugin(invariants.New(), nil)
	require.NoError(t, err)
	f, err := fstools.Open(dir, 0)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return &world{root: root, c: c, mgr: live.NewManager(c, store), tools: f.Tools(), logs: logs}
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

func folder(t *testing.T) string {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "README.md"), []byte("# hi\n"), 0o644))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "src"), 0o755))
	return dir
}

// run runs the prompts with prov and returns the session.
func (w *world) run(t *testing.T, prov agentloop.Provider, opts ...agentloop.Option) *live.Session {
	t.Helper()
	a := agentloop.New(w.c, agentloop.Config{System: "be helpful", Model: "m1"}, append([]agentloop.Option{agentloop.WithProvider(prov), agentloop.WithTools(w.tools...)}, opts...)...)
	sess, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	for _, p := range prompts {
		res, err := a.Run(context.Background(), sess, p)
		require.NoError(t, err)
		require.Equal(t, session.ReasonCompleted, res.Reason)
	}
	return sess
}

func digests(t *testing.T, recs []session.Record) []string {
	var out []string
	for _, r := range recs {
		if r.Type() == session.TypeRequestDigest {
			d, err := session.DecodeData[session.Digest](r)
			require.NoError(t, err)
			out = append(out, d.SHA256)
		}
	}
	return out
}

// surface projects records to what a model saw, without times.
func surface(t *testing.T, recs []session.Record) []session.Message {
	msgs, err := session.DeriveMessages(recs)
	require.NoError(t, err)
	return msgs
}

func record(t *testing.T, dir string) *live.Session {
	w := newWorld(t, memory.New(), dir)
	prov, err := scripted.New(scripted.Config{})
	require.NoError(t, err)
	return w.run(t, prov)
}

func TestReplayYieldsIdenticalRequests(t *testing.T) {
	dir := folder(t)
	orig := record(t, dir)
	want := digests(t, orig.Records())
	require.Len(t, want, 6)

	rec, err := replay.FromRecords(orig.Records())
	require.NoError(t, err)
	assert.Equal(t, "scripted", rec.Provider)
	require.Len(t, rec.Steps, 6)

	w := newWorld(t, memory.New(), dir)
	p := replay.New(rec)
	p.Verify = true
	again := w.run(t, p)
	assert.Equal(t, want, digests(t, again.Records()))
	assert.Equal(t, surface(t, orig.Records()), surface(t, again.Records()))
	assert.NoError(t, p.Check())
}

func TestReplayAsShortCircuitingListener(t *testing.T) {
	dir := folder(t)
	orig := record(t, dir)
	rec, err := replay.FromRecords(orig.Records())
	require.NoError(t, err)

	w := newWorld(t, memory.New(), dir)
	p := replay.New(rec)
	p.Verify = true
	replay.Listen(w.c, p)
	// Checks registered first still see every request.
	var checked int
	agentloop.LLMStream.On(w.c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
		checked++
		return next(ctx, req)
	}, bus.Prepend)
	never := &countingProvider{name: "scripted"}
	again := w.run(t, never)
	assert.Zero(t, never.calls, "the configured provider is never reached")
	assert.Equal(t, 6, checked)
	// Nothing was handed to a provider, so no request/digest is logged;
	// with Verify each request's sealed digest equalled the recorded one.
	assert.Empty(t, digests(t, again.Records()))
	assert.NoError(t, p.Check())

	// One-shot requests pass through to the provider.
	_, err = agentloop.Complete(context.Background(), w.c, never, again, agentloop.OneShot{Purpose: "title", Instruction: "title?"})
	require.NoError(t, err)
	assert.Equal(t, 1, never.calls)
}

type countingProvider struct {
	name  string
	calls int
}

func (c *countingProvider) Name() string { return c.name }
func (c *countingProvider) Stream(context.Context, *agentloop.Request) (agentloop.Stream, error) {
	c.calls++
	return func(yield func(agentloop.Chunk, error) bool) { yield(agentloop.Chunk{Text: "x"}, nil) }, nil
}

func TestReplayFailsBeyondTheRecordingAndReportsLeftovers(t *testing.T) {
	dir := folder(t)
	orig := record(t, dir)
	recs := orig.Records()
	// Only the first turn.
	var cut int
	for i, r := range recs {
		if r.Type() == session.TypeTurnEnd {
			cut = i + 1
			break
		}
	}
	rec, err := replay.FromRecords(recs[:cut])
	require.NoError(t, err)
	require.Len(t, rec.Steps, 2)

	w := newWorld(t, memory.New(), dir)
	p := replay.New(rec)
	a := agentloop.New(w.c, agentloop.Config{System: "be helpful", Model: "m1"}, agentloop.WithProvider(p), agentloop.WithTools(w.tools...))
	sess, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	_, err = a.Run(context.Background(), sess, prompts[0])
	require.NoError(t, err)
	assert.NoError(t, p.Check())
	res, err := a.Run(context.Background(), sess, prompts[1])
	require.ErrorIs(t, err, replay.ErrExhausted)
	assert.Equal(t, session.ReasonError, res.Reason)

	unused := replay.New(rec)
	assert.ErrorIs(t, unused.Check(), replay.ErrIncomplete)
	assert.Equal(t, 2, unused.Remaining())
}

func TestReplayVerifyRefusesADivergedRequest(t *testing.T) {
	dir := folder(t)
	orig := record(t, dir)
	rec, err := replay.FromRecords(orig.Records())
	require.NoError(t, err)
	w := newWorld(t, memory.New(), dir)
	p := replay.New(rec)
	p.Verify = true
	a := agentloop.New(w.c, agentloop.Config{System: "a different system prompt", Model: "m1"}, agentloop.WithProvider(p), agentloop.WithTools(w.tools...))
	sess, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	_, err = a.Run(context.Background(), sess, prompts[0])
	assert.ErrorIs(t, err, replay.ErrDiverged)
}

func TestReplayReproducesAFailedStep(t *testing.T) {
	dir := folder(t)
	w := newWorld(t, memory.New(), dir)
	prov, err := scripted.New(scripted.Config{Script: []scripted.Reply{{Text: "half an answer", Error: &scripted.Failure{Status: 400, Message: "content filter", After: 2}}}})
	require.NoError(t, err)
	a := agentloop.New(w.c, agentloop.Config{}, agentloop.WithProvider(prov), agentloop.WithTools())
	orig, err := w.mgr.Create(context.Background())
	require.NoError(t, err)
	_, err = a.Run(context.Background(), orig, "hi")
	require.Error(t, err)

	rec, err := replay.FromRecords(orig.Records())
	require.NoError(t, err)
	require.Len(t, rec.Steps, 1)
	assert.Contains(t, rec.Steps[0].Err, "content filter")

	w2 := newWorld(t, memory.New(), dir)
	b := agentloop.New(w2.c, agentloop.Config{}, agentloop.WithProvider(replay.New(rec)), agentloop.WithTools())
	again, err := w2.mgr.Create(context.Background())
	require.NoError(t, err)
	res, err := b.Run(context.Background(), again, "hi")
	require.ErrorContains(t, err, "content filter")
	assert.Equal(t, session.ReasonError, res.Reason)
	assert.Equal(t, "half an ", res.Content)
	assert.Equal(t, surface(t, orig.Records()), surface(t, again.Records()))
}

func TestReplayPluginFromFileAndFromStore(t *testing.T) {
	dir := folder(t)
	logs := t.TempDir()
	store, err := jsonl.Open(logs)
	require.NoError(t, err)
	w := newWorld(t, store, dir)
	prov, err := scripted.New(scripted.Config{})
	require.NoError(t, err)
	orig := w.run(t, prov)
	require.NoError(t, orig.Close(context.Background()))
	want := digests(t, orig.Records())

	cases := []struct {
		name string
		cfg  replay.Config
	}{
		{"file", replay.Config{File: store.Path(orig.ID()), Verify: true}},
		{"session id", replay.Config{Session: orig.ID(), Verify: true}},
		{"listener", replay.Config{File: store.Path(orig.ID()), Listen: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w2 := newWorld(t, memory.New(), dir)
			_, err := live.Sessions.Provide(w2.c, live.NewManager(w2.c, store))
			require.NoError(t, err)
			m, ok := bus.LookupModule(replay.Name)
			require.True(t, ok)
			cfg := tc.cfg
			f, err := w2.c.Plugin(m.New(), &cfg)
			require.NoError(t, err)
			var opts []agentloop.Option
			if tc.cfg.Listen {
				opts = append(opts, agentloop.WithProvider(&countingProvider{name: "scripted"}))
			}
			// Without WithProvider the agent reads the provider service.
			a := agentloop.New(w2.c, agentloop.Config{System: "be helpful", Model: "m1"}, append([]agentloop.Option{agentloop.WithTools(w2.tools...)}, opts...)...)
			sess, err := w2.mgr.Create(context.Background())
			require.NoError(t, err)
			for _, p := range prompts {
				_, err := a.Run(context.Background(), sess, p)
				require.NoError(t, err)
			}
			if tc.cfg.Listen {
				// Answered by the listener: nothing was handed to a
				// provider, so no request/digest is logged.
				assert.Empty(t, digests(t, sess.Records()))
			} else {
				assert.Equal(t, want, digests(t, sess.Records()))
			}
			require.NoError(t, f.Dispose())
			assert.NotContains(t, w2.logs.String(), "replay incomplete")
		})
	}
}

func TestReplayPluginLogsAnIncompleteReplayAtDispose(t *testing.T) {
	dir := folder(t)
	logs := t.TempDir()
	store, err := jsonl.Open(logs)
	require.NoError(t, err)
	w := newWorld(t, store, dir)
	prov, err := scripted.New(scripted.Config{})
	require.NoError(t, err)
	orig := w.run(t, prov)
	require.NoError(t, orig.Close(context.Background()))

	w2 := newWorld(t, memory.New(), dir)
	f, err := w2.c.Plugin(replay.Plugin, &replay.Config{File: store.Path(orig.ID())})
	require.NoError(t, err)
	require.NoError(t, f.Dispose())
	assert.Contains(t, w2.logs.String(), "replay incomplete")
	assert.Contains(t, w2.logs.String(), "6 of 6 steps not served")
}

func TestReplayPluginConfigErrors(t *testing.T) {
	r := bus.New()
	defer r.Dispose()
	_, err := r.Context().Plugin(replay.Plugin, &replay.Config{})
	assert.ErrorContains(t, err, "file or session is required")
	_, err = r.Context().Plugin(replay.Plugin, &replay.Config{File: "a.jsonl", Session: "01JDXXXXXXXXXXXXXXXXXXXXXX"})
	assert.ErrorContains(t, err, "exclusive")
	_, err = r.Context().Plugin(replay.Plugin, &replay.Config{File: "/no/such/file.jsonl"})
	assert.ErrorIs(t, err, os.ErrNotExist)
	_, err = r.Context().Plugin(replay.Plugin, &replay.Config{Session: "01JDXXXXXXXXXXXXXXXXXXXXXX"})
	assert.ErrorIs(t, err, bus.ErrServiceMissing)
}
