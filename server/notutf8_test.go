package server_test

import (
	"net/http"
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
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// A posted turn whose prompt, listed file name and read file are not
// UTF-8 leaves a log the API serves and verifies, now and after a
// restart reads it from the store.
func TestATurnOnBytesThatAreNotUTF8IsServedAndVerifies(t *testing.T) {
	root := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(root, "bad\xff.txt"), nil, 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(root, "latin1.txt"), []byte("caf\xe9 cr\xe8me"), 0o644))
	store := filepath.Join(t.TempDir(), "sessions")
	src := vigil.Compose(
		vigil.Plugin("store/jsonl", &jsonlstore.Config{Dir: store}),
		vigil.Plugin("provider/scripted", scripted.Config{Repeat: true, Script: []scripted.Reply{
			{ToolCalls: []scripted.ToolCall{{Name: "list_dir", Arguments: map[string]any{"path": "."}}, {Name: "read_file", Arguments: map[string]any{"path": "latin1.txt"}}}},
			{Text: "Done."},
		}}),
		vigil.Plugin("tools/fs", &fstools.Config{Root: root}),
		vigil.Plugin("agent", agentloop.Config{System: "Be brief."}),
		vigil.Plugin("invariants", invariants.Config{Mode: "strict"}),
	)
	a := newAPI(t, src, server.Options{})
	a.startWorker()
	id := a.create()
	a.json(http.StatusAccepted, "POST", "/v1/sessions/"+id+"/turns", "{\"prompt\":\"caf\xc3\"}", nil)
	recs := a.until(id, -1, turnEnd)
	end, err := session.DecodeData[session.TurnEnd](recs[len(recs)-1])
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, end.Reason, end.Error)
	a.stopWorker()

	for _, api := range []*api{a, newAPI(t, src, server.Options{})} {
		var rep server.VerifyReport
		api.json(http.StatusOK, "GET", "/v1/sessions/"+id+"/verify", "", &rep)
		assert.True(t, rep.OK, "%+v", rep.Violations)
		assert.Equal(t, len(recs), rep.Events)

		code, body := api.do("GET", "/v1/sessions/"+id+"/events", "")
		require.Equal(t, http.StatusOK, code, "%s", body)
		lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
		require.Len(t, lines, len(recs))
		for _, want := range []string{`"content":"caf�"`, `bad�.txt`, `"content":"caf� cr�me"`} {
			assert.Contains(t, string(body), want)
		}
		api.json(http.StatusOK, "GET", "/v1/sessions/"+id, "", nil)
	}
}
