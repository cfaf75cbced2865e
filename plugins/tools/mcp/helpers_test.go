package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/store/memory"
	"github.com/vigil-run/vigil/plugins/tools/mcp"
	"github.com/vigil-run/vigil/plugins/tools/mcp/internal/testserver"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// host is a bus with the invariants plugin in strict mode, sessions in
// memory, the scripted model and the agent: the composition a
// plugins.yaml would make, so every turn also proves the log rules.
type host struct {
	t     *testing.T
	root  *bus.Root
	c     *bus.Context
	logs  *syncBuffer
	agent *agentloop.Agent
	mgr   *live.Manager
}

func newHost(t *testing.T, script ...scripted.Reply) *host {
	t.Helper()
	logs := &syncBuffer{}
	root := bus.New(bus.WithLogger(hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})))
	t.Cleanup(func() { _ = root.Dispose() })
	c := root.Context()
	mount(t, c, invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	mount(t, c, memory.Plugin, nil)
	mount(t, c, scripted.Plugin, &scripted.Config{Script: script})
	mount(t, c, agentloop.Plugin, &agentloop.Config{MaxSteps: 4})
	a, err := agentloop.AgentService.Get(c)
	require.NoError(t, err)
	mgr, err := live.Sessions.Get(c)
	require.NoError(t, err)
	return &host{t: t, root: root, c: c, logs: logs, agent: a, mgr: mgr}
}

func mount(t *testing.T, c *bus.Context, p bus.Plugin, cfg any) *bus.Fiber {
	t.Helper()
	f, err := c.Plugin(p, cfg)
	require.NoError(t, err)
	require.Equal(t, bus.StateActive, f.State())
	return f
}

// mcp mounts tools/mcp with cfg and requires it to be active.
func (h *host) mcp(cfg *mcp.Config) *bus.Fiber {
	h.t.Helper()
	return mount(h.t, h.c, mcp.Plugin, cfg)
}

func (h *host) session() *live.Session {
	h.t.Helper()
	s, err := h.mgr.Create(context.Background())
	require.NoError(h.t, err)
	return s
}

// turn runs one turn and requires it to end with reason.
func (h *host) turn(ctx context.Context, s *live.Session, prompt, reason string) *agentloop.TurnResult {
	h.t.Helper()
	res, err := h.agent.Run(ctx, s, prompt)
	require.NotNil(h.t, res, "turn did not start: %v", err)
	require.Equal(h.t, reason, res.Reason, "turn error: %v", err)
	return res
}

// toolNames lists the tool services, by service name.
func (h *host) toolNames() []string {
	named, err := bus.Lookup[agentloop.Tool](h.c, agentloop.ToolServicePrefix)
	require.NoError(h.t, err)
	var out []string
	for _, n := range named {
		out = append(out, strings.TrimPrefix(n.Name, agentloop.ToolServicePrefix))
	}
	return out
}

func (h *host) tool(name string) agentloop.Tool {
	h.t.Helper()
	t, err := bus.NewService[agentloop.Tool](agentloop.ToolServicePrefix + name).Get(h.c)
	require.NoError(h.t, err)
	return t
}

// call runs a tool directly, outside a turn.
func (h *host) call(name, args string) (string, error) {
	h.t.Helper()
	return h.tool(name).Execute(context.Background(), json.RawMessage(args))
}

// stdio is the config of the test server as a subprocess. dir, when not
// empty, receives its pid file and hang marker.
func stdio(prefix, dir string) *mcp.Config {
	cfg := &mcp.Config{Command: serverBin, Prefix: prefix, Exclude: []string{"admin_*"}}
	if dir != "" {
		cfg.Env = map[string]string{"MCPSERVER_DIR": dir}
	}
	return cfg
}

// httpServer runs the test server in process over streamable HTTP on
// loopback and returns its config. Make it before the host, so that the
// host is disposed first. hanging is called when a hang call
// starts.
func httpServer(t *testing.T, prefix string, hanging func()) (*mcp.Config, *mcpsdk.Server) {
	t.Helper()
	srv := testserver.New(testserver.Options{Hanging: hanging})
	ts := httptest.NewServer(mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv }, nil))
	// Hosts made after the server are disposed before it closes (cleanups
	// run last first); cutting the connections keeps a misordered test
	// from hanging on the client's open event stream.
	t.Cleanup(func() {
		ts.CloseClientConnections()
		ts.Close()
	})
	return &mcp.Config{URL: ts.URL, Prefix: prefix, Exclude: []string{"admin_*"}}, srv
}

// transports are the two ways to reach the test server.
var transports = []struct {
	name   string
	config func(t *testing.T, prefix string) *mcp.Config
}{
	{"stdio", func(t *testing.T, prefix string) *mcp.Config { return stdio(prefix, "") }},
	{"http", func(t *testing.T, prefix string) *mcp.Config {
		cfg, _ := httpServer(t, prefix, nil)
		return cfg
	}},
}

// waitFile waits for path to exist.
func waitFile(t *testing.T, path string) {
	t.Helper()
	require.Eventually(t, func() bool {
		_, err := os.Stat(path)
		return err == nil
	}, 10*time.Second, 5*time.Millisecond, "waiting for %s", path)
}

// readPid waits for the pid file name in dir and returns its pid.
func readPid(t *testing.T, dir, name string) int {
	t.Helper()
	path := filepath.Join(dir, name)
	waitFile(t, path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(string(b))
	require.NoError(t, err)
	return pid
}

// ofType returns the records of type typ.
func ofType(s *live.Session, typ string) []session.Record {
	var out []session.Record
	for _, r := range s.Records() {
		if r.Type() == typ {
			out = append(out, r)
		}
	}
	return out
}

func decode[T any](t *testing.T, r session.Record) T {
	t.Helper()
	v, err := session.DecodeData[T](r)
	require.NoError(t, err)
	return v
}

// results returns the session's tool results.
func results(t *testing.T, s *live.Session) []session.ToolResult {
	var out []session.ToolResult
	for _, r := range ofType(s, session.TypeToolResult) {
		out = append(out, decode[session.ToolResult](t, r))
	}
	return out
}

// verify renders the session's log as stored and checks it offline with
// the invariants rules.
func verify(t *testing.T, s *live.Session) {
	t.Helper()
	buf := session.AppendHeaderLine(nil, s.Info())
	for _, r := range s.Records() {
		buf = r.AppendLine(buf)
	}
	rep, err := invariants.Verify(bytes.NewReader(buf))
	require.NoError(t, err)
	require.Empty(t, rep.Violations)
	require.Equal(t, s.Len(), rep.Events)
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// call is a scripted tool call.
func callOf(name string, args map[string]any) scripted.Reply {
	return scripted.Reply{Text: "Calling " + name + ".", ToolCalls: []scripted.ToolCall{{Name: name, Arguments: args}}}
}

func say(text string) scripted.Reply { return scripted.Reply{Text: text} }
