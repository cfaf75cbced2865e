package vigil_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	jsonlstore "github.com/vigil-run/vigil/plugins/store/jsonl"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
	"github.com/vigil-run/vigil/session"
)

// notUTF8Folder makes a folder a session trips on when its bytes are not
// handled: a file name that is not UTF-8, a Latin-1 file and a binary one.
func notUTF8Folder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range map[string]string{
		"bad\xff.txt": "",
		"latin1.txt":  "caf\xe9 cr\xe8me \xef\xbf\xbd",
		"binary.bin":  "\x00\x01\xff\xfe",
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644))
	}
	return dir
}

// fsAgent is the default composition's shape on a jsonl store: the
// scripted model (the default script lists the folder and describes it,
// or the script given), tools/fs on root, the strict invariants.
func fsAgent(store, root string, script ...scripted.Reply) vigil.Source {
	return vigil.Compose(
		vigil.Plugin("store/jsonl", &jsonlstore.Config{Dir: store}),
		vigil.Plugin("provider/scripted", scripted.Config{Script: script}),
		vigil.Plugin("agent", agentloop.Config{System: "Answer from what the tools return.", Model: "scripted"}),
		vigil.Plugin("tools/fs", &fstools.Config{Root: root}),
		vigil.Plugin("invariants", &invariants.Config{Mode: invariants.ModeStrict}),
	)
}

// TestLegacyLogsVerifyAndTakeAnotherTurn: the logs the old code wrote from
// bytes that are not UTF-8 (session/testdata/legacy-utf8) load, verify,
// and take another turn that trips on the same bytes; their lines stay as
// they were, and the whole log verifies after.
func TestLegacyLogsVerifyAndTakeAnotherTurn(t *testing.T) {
	ctx := context.Background()
	fixtures, err := filepath.Glob("session/testdata/legacy-utf8/*.jsonl")
	require.NoError(t, err)
	require.Len(t, fixtures, 2)
	store := filepath.Join(t.TempDir(), "sessions")
	require.NoError(t, os.MkdirAll(store, 0o755))
	old := map[string][]byte{}
	for _, f := range fixtures {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		id := strings.TrimSuffix(filepath.Base(f), ".jsonl")
		require.NoError(t, os.WriteFile(filepath.Join(store, id+".jsonl"), b, 0o644))
		verifyStored(t, store, id)
		old[id] = b
	}

	rt := open(t, fsAgent(store, notUTF8Folder(t)))
	for id, b := range old {
		res, err := rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "again, caf\xc3"})
		require.NoError(t, err)
		require.Equal(t, session.ReasonCompleted, res.Reason)
		assert.Equal(t, 2, res.Turn)
		now, err := os.ReadFile(filepath.Join(store, id+".jsonl"))
		require.NoError(t, err)
		require.True(t, bytes.HasPrefix(now, b), "the old lines are kept as they were")
		assert.NotContains(t, string(now[len(b):]), `\ufffd`, "what is appended holds U+FFFD itself")
		assert.Contains(t, string(now[len(b):]), "again, caf\uFFFD")
		verifyStored(t, store, id)
	}
}

// TestBytesThatAreNotUTF8DoNotBrickASession: a prompt, a file name and
// file contents that are not UTF-8 make a session that verifies, takes
// another turn and verifies again.
func TestBytesThatAreNotUTF8DoNotBrickASession(t *testing.T) {
	ctx := context.Background()
	store := filepath.Join(t.TempDir(), "sessions")
	read := scripted.Reply{Text: "Reading.", ToolCalls: []scripted.ToolCall{
		{Name: "list_dir", Arguments: map[string]any{"path": "."}},
		{Name: "read_file", Arguments: map[string]any{"path": "latin1.txt"}},
		{Name: "read_file", Arguments: map[string]any{"path": "binary.bin"}},
	}}
	rt := open(t, fsAgent(store, notUTF8Folder(t), read, scripted.Reply{Text: "Done."}, read, scripted.Reply{Text: "Done again."}))
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "caf\xc3"})
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)
	verifyStored(t, store, res.Session)
	res, err = rt.Turn(ctx, vigil.TurnOptions{Session: res.Session, Prompt: "more \xfe"})
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)
	verifyStored(t, store, res.Session)

	b, err := os.ReadFile(filepath.Join(store, res.Session+".jsonl"))
	require.NoError(t, err)
	for _, want := range []string{"caf\uFFFD", "bad\uFFFD.txt", "caf\uFFFD cr\uFFFDme \uFFFD", `\u0000\u0001` + "\uFFFD\uFFFD"} {
		assert.Contains(t, string(b), want)
	}
	assert.NotContains(t, string(b), `\ufffd`)
}
