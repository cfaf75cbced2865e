package mcp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/plugins/tools/mcp"
	"github.com/vigil-run/vigil/plugins/tools/mcp/internal/testserver"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"

	_ "github.com/vigil-run/vigil/invariants"
	_ "github.com/vigil-run/vigil/plugins/provider/scripted"
	_ "github.com/vigil-run/vigil/plugins/store/memory"
)

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  mcp.Config
		want string // "" when valid
	}{
		{"command", mcp.Config{Command: "srv", Args: []string{"-v"}, Env: map[string]string{"A": "b"}}, ""},
		{"url", mcp.Config{URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer x"}}, ""},
		{"patterns and timeout", mcp.Config{Command: "srv", Include: []string{"read_*"}, Exclude: []string{"*_all"}, Timeout: time.Second}, ""},
		{"neither", mcp.Config{}, "one of command or url is required"},
		{"both", mcp.Config{Command: "srv", URL: "http://x"}, "exclusive"},
		{"bad url", mcp.Config{URL: "ftp://x"}, "not an http or https URL"},
		{"relative url", mcp.Config{URL: "/mcp"}, "not an http or https URL"},
		{"args with url", mcp.Config{URL: "http://x", Args: []string{"a"}}, "command only"},
		{"headers with command", mcp.Config{Command: "srv", Headers: map[string]string{"A": "b"}}, "url only"},
		{"bad include", mcp.Config{Command: "srv", Include: []string{"[a"}}, "include pattern"},
		{"bad exclude", mcp.Config{Command: "srv", Exclude: []string{"a["}}, "exclude pattern"},
		{"negative timeout", mcp.Config{Command: "srv", Timeout: -time.Second}, "timeout"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, mcp.ErrConfig)
			assert.ErrorContains(t, err, tc.want)
		})
	}
}

// TestPluginsYAMLMountsSeveralServers loads a plugins.yaml with two MCP
// servers, one over stdio and one over HTTP, and runs a turn that uses
// both.
func TestPluginsYAMLMountsSeveralServers(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := testserver.New(testserver.Options{})
	handler := mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization"))
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})

	vars := map[string]string{"MCP_SERVER": serverBin, "MCP_URL": ts.URL, "MCP_TOKEN": "secret"}
	f, err := config.Parse("plugins.yaml", []byte(`
plugins:
  - name: store/memory
  - name: invariants
    config: { mode: strict }
  - name: provider/scripted
    config:
      script:
        - text: "Both."
          tool_calls:
            - { name: local_echo, arguments: { text: "one" } }
            - { name: web_echo, arguments: { text: "two" } }
        - text: "Done."
  - name: agent
  - id: local
    name: tools/mcp
    config:
      command: ${MCP_SERVER}
      env: { VIGIL_MCP_TEST: local }
      include: [echo, getenv]
      prefix: local_
      timeout: 30s
  - id: web
    name: tools/mcp
    config:
      url: ${MCP_URL}
      headers: { Authorization: "Bearer ${MCP_TOKEN}" }
      exclude: ["*_tool", "admin_*", hang, fail, image, getwd, key]
      prefix: web_
`), func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	require.NoError(t, err)
	root := bus.New(bus.WithLogger(hclog.NewNullLogger()))
	t.Cleanup(func() { _ = root.Dispose() })
	comp, err := config.Apply(root.Context(), f)
	require.NoError(t, err)
	require.NoError(t, comp.Err())

	h := &host{t: t, root: root, c: root.Context()}
	assert.Equal(t, []string{"local_echo", "local_getenv", "web_echo", "web_getenv", "web_roots"}, h.toolNames())
	got, err := h.call("local_getenv", `{"name":"VIGIL_MCP_TEST"}`)
	require.NoError(t, err)
	assert.Equal(t, "local", got)

	h.agent, err = agentloop.AgentService.Get(h.c)
	require.NoError(t, err)
	h.mgr, err = live.Sessions.Get(h.c)
	require.NoError(t, err)
	s := h.session()
	h.turn(context.Background(), s, "echo on both", session.ReasonCompleted)
	res := results(t, s)
	require.Len(t, res, 2)
	assert.Equal(t, "echo: one", res[0].Content)
	assert.Equal(t, "echo: two", res[1].Content)
	verify(t, s)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seen)
	for _, a := range seen {
		assert.Equal(t, "Bearer secret", a)
	}
}
