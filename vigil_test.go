package vigil_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	jsonlstore "github.com/vigil-run/vigil/plugins/store/jsonl"
	_ "github.com/vigil-run/vigil/plugins/store/memory" // store/memory, by name
	"github.com/vigil-run/vigil/session"
)

// The root package links the core only: an embedder picks the plugins
// (and so the SDKs and drivers) it links.
func TestImportLinksNoPlugin(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/vigil-run/vigil")
	for _, d := range deps {
		assert.NotContains(t, d, "github.com/vigil-run/vigil/plugins", "vigil imports a plugin")
		for _, sdk := range []string{"github.com/jackc/pgx", "github.com/openai/", "github.com/anthropics/", "github.com/modelcontextprotocol/", "github.com/hashicorp/go-plugin", "google.golang.org/grpc"} {
			assert.False(t, strings.HasPrefix(d, sdk), "vigil links %s", d)
		}
	}
}

// memoryAgent is a composition of Go values: an in-memory store, a
// scripted model and the agent.
func memoryAgent(script ...scripted.Reply) vigil.Source {
	return vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: script, Repeat: true}),
		vigil.Plugin("agent", agentloop.Config{System: "be brief"}),
	)
}

func open(t *testing.T, src vigil.Source) *vigil.Runtime {
	t.Helper()
	rt, err := vigil.Open(context.Background(), src)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, rt.Close()) })
	return rt
}

func TestTurnStreamsChunksAndContinuesTheSession(t *testing.T) {
	ctx := context.Background()
	rt := open(t, memoryAgent(scripted.Reply{Text: "Hello there."}))
	var text strings.Builder
	var started string
	res, err := rt.Turn(ctx, vigil.TurnOptions{
		Prompt:  "hi",
		OnStart: func(id string) { started = id },
		OnChunk: func(c agentloop.Chunk) { text.WriteString(c.Text) },
	})
	require.NoError(t, err)
	assert.Equal(t, "Hello there.", text.String())
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, "Hello there.", res.Content)
	assert.Equal(t, 1, res.Turn)
	assert.Equal(t, res.Session, started)
	assert.Positive(t, res.Usage.Output)

	res2, err := rt.Turn(ctx, vigil.TurnOptions{Session: res.Session, Prompt: "again"})
	require.NoError(t, err)
	assert.Equal(t, res.Session, res2.Session)
	assert.Equal(t, 2, res2.Turn)

	log, err := rt.Session(ctx, res.Session)
	require.NoError(t, err)
	msgs, err := session.DeriveMessages(log.Records)
	require.NoError(t, err)
	require.Len(t, msgs, 4)
	assert.Equal(t, "again", msgs[2].Content)
}

func TestRunYieldsChunksThenStopsTheTurnWhenTheLoopEnds(t *testing.T) {
	ctx := context.Background()
	rt := open(t, memoryAgent(scripted.Reply{Text: "one two three four"}))
	id, err := rt.NewSession(ctx)
	require.NoError(t, err)

	var all []string
	for c, err := range rt.Run(ctx, id, "count") {
		require.NoError(t, err)
		all = append(all, c.Text)
	}
	assert.Equal(t, "one two three four", strings.Join(all, ""))

	var first string
	for c, err := range rt.Run(ctx, id, "count again") {
		require.NoError(t, err)
		first = c.Text
		break
	}
	assert.Equal(t, "one ", first)
	log, err := rt.Session(ctx, id)
	require.NoError(t, err)
	var reasons []string
	for _, r := range log.Records {
		if r.Type() == session.TypeTurnEnd {
			d, err := session.DecodeData[session.TurnEnd](r)
			require.NoError(t, err)
			reasons = append(reasons, d.Reason)
		}
	}
	assert.Equal(t, []string{session.ReasonCompleted, session.ReasonAborted}, reasons)
}

func TestRunYieldsTheTurnsError(t *testing.T) {
	rt := open(t, memoryAgent())
	var errs []error
	for _, err := range rt.Run(context.Background(), "01NOSUCHSESSION", "hi") {
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	assert.ErrorIs(t, errs[0], vigil.ErrNotFound)
}

func TestFileListsLoadsAndForksStoredSessions(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "plugins.yaml")
	yaml := "plugins:\n" +
		"  - name: store/jsonl\n    config: { dir: " + filepath.Join(dir, "sessions") + " }\n" +
		"  - name: provider/scripted\n    config: { script: [ { text: \"Fine.\" } ], repeat: true }\n" +
		"  - name: agent\n"
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o600))
	rt := open(t, vigil.File(path))
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "how are you?"})
	require.NoError(t, err)

	infos, err := rt.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	assert.Equal(t, res.Session, infos[0].ID)

	log, err := rt.Session(ctx, res.Session)
	require.NoError(t, err)
	end := int64(len(log.Records) - 1)
	fork, err := rt.Fork(ctx, res.Session, end)
	require.NoError(t, err)
	flog, err := rt.Session(ctx, fork)
	require.NoError(t, err)
	require.NotNil(t, flog.Info.Parent)
	assert.Equal(t, session.Parent{ID: res.Session, Seq: end, Root: session.RootOf(log.Records)}, *flog.Info.Parent)

	// The fork continues on its own.
	res2, err := rt.Turn(ctx, vigil.TurnOptions{Session: fork, Prompt: "and now?"})
	require.NoError(t, err)
	assert.Equal(t, 2, res2.Turn)
	infos, err = rt.Sessions(ctx)
	require.NoError(t, err)
	assert.Len(t, infos, 2)

	_, err = rt.Fork(ctx, "01NOSUCHSESSION", 0)
	assert.ErrorIs(t, err, vigil.ErrNotFound)
}

// holdTurn starts a turn on session id that stops at its first chunk
// until release is called, and returns once the turn is there; first
// receives the turn's error.
func holdTurn(ctx context.Context, rt *vigil.Runtime, id string) (release func(), first <-chan error) {
	inTurn, held := make(chan struct{}), make(chan struct{})
	done := make(chan error, 1)
	go func() {
		once := false
		_, err := rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "first", OnChunk: func(agentloop.Chunk) {
			if !once {
				once = true
				close(inTurn)
				<-held
			}
		}})
		done <- err
	}()
	<-inTurn
	return func() { close(held) }, done
}

func TestTurnOnABusySessionIsErrBusyUnlessItWaits(t *testing.T) {
	ctx := context.Background()
	rt := open(t, memoryAgent(scripted.Reply{Text: "a b"}))
	id, err := rt.NewSession(ctx)
	require.NoError(t, err)

	release, first := holdTurn(ctx, rt, id)
	_, err = rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "second"})
	require.ErrorIs(t, err, vigil.ErrBusy)

	waited := make(chan *vigil.Result, 1)
	go func() {
		res, err := rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "second", Wait: true})
		assert.NoError(t, err)
		waited <- res
	}()
	release()
	require.NoError(t, <-first)
	res := <-waited
	require.NotNil(t, res)
	assert.Equal(t, 2, res.Turn)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
}

// Two runtimes over one jsonl directory are two processes as far as the
// store's lock is concerned.
func TestTurnOnASessionLeasedElsewhereIsErrBusy(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	src := func() vigil.Source {
		return vigil.Compose(
			vigil.Plugin("store/jsonl", &jsonlstore.Config{Dir: dir}),
			vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "a b"}}, Repeat: true}),
			vigil.Plugin("agent", nil),
		)
	}
	a, b := open(t, src()), open(t, src())
	id, err := a.NewSession(ctx)
	require.NoError(t, err)

	release, first := holdTurn(ctx, a, id)
	_, err = b.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "second"})
	assert.ErrorIs(t, err, vigil.ErrBusy)
	release()
	require.NoError(t, <-first)
	res, err := b.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "second"})
	require.NoError(t, err)
	assert.Equal(t, 2, res.Turn)
}

func TestOpenRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  vigil.Source
		is   error
		msg  string
	}{
		{"a plugin waiting for a service", vigil.Compose(vigil.Plugin("store/memory", nil), vigil.Plugin("agent", nil)),
			vigil.ErrWaiting, `vigil.Compose: agent waits for llm/provider (is a plugin that provides it missing or disabled?)`},
		{"an unknown plugin", vigil.Compose(vigil.Plugin("provider/nonesuch", nil)),
			config.ErrUnknownPlugin, `vigil.Compose: unknown plugin "provider/nonesuch" (is its package imported?)`},
		{"two entries with one id", vigil.Compose(vigil.Plugin("store/memory", nil), vigil.Plugin("store/memory", nil)),
			config.ErrDuplicateID, `vigil.Compose: duplicate id "store/memory"; give one entry an id`},
		{"a config of the wrong type", vigil.Compose(vigil.Plugin("provider/scripted", agentloop.Config{})),
			nil, "provider/scripted"},
		{"a file that is not there", vigil.File(filepath.Join(t.TempDir(), "plugins.yaml")),
			os.ErrNotExist, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := vigil.Open(context.Background(), tc.src)
			require.Error(t, err)
			assert.Nil(t, rt)
			if tc.is != nil {
				assert.ErrorIs(t, err, tc.is)
			}
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestCallsWithoutTheirServiceAreErrNoService(t *testing.T) {
	ctx := context.Background()
	rt := open(t, vigil.Compose(vigil.Plugin("store/memory", nil)))
	_, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "hi"})
	assert.ErrorIs(t, err, vigil.ErrNoService)
	assert.EqualError(t, err, `vigil.Compose: no plugin provides "agent/loop"`)

	empty := open(t, vigil.Compose())
	_, err = empty.Sessions(ctx)
	assert.ErrorIs(t, err, vigil.ErrNoService)
}

func TestComposeLeavesTheCallersEntriesAsTheyAre(t *testing.T) {
	entries := []config.Entry{{Name: "store/memory"}}
	rt := open(t, vigil.Compose(entries...))
	assert.Empty(t, entries[0].ID)
	assert.NotNil(t, rt.Composition().Fiber("store/memory"))
}
