//go:build unix

package external_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vigil-run/vigil/agentloop"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// bins holds the plugin binaries TestMain builds: the two examples and
// the test plugin.
var bins = map[string]string{
	"units":      "../../examples/plugins/units",
	"policy":     "../../examples/plugins/policy",
	"testplugin": "./testdata/testplugin",
}

func TestMain(m *testing.M) {
	if os.Getenv(helperHostEnv) != "" {
		os.Exit(runHelperHost())
	}
	dir, err := os.MkdirTemp("", "vigil-external-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for name, pkg := range bins {
		out := filepath.Join(dir, name)
		cmd := exec.Command("go", "build", "-o", out, pkg)
		if b, err := cmd.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "building %s: %v\n%s", pkg, err, b)
			os.Exit(1)
		}
		bins[name] = out
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// logBuffer collects the host's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(b)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// host is a bus with the invariants plugin in strict mode and a session
// manager over a memory store, provided as the sessions service.
type host struct {
	t    testing.TB
	root *bus.Root
	c    *bus.Context
	mgr  *live.Manager
	logs *logBuffer
}

func newHost(t testing.TB) *host {
	t.Helper()
	logs := &logBuffer{}
	root := bus.New(bus.WithLogger(hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug})))
	t.Cleanup(func() {
		_ = root.Dispose()
		if t.Failed() {
			t.Logf("host log:\n%s", logs.String())
		}
	})
	c := root.Context()
	_, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	require.NoError(t, err)
	var n atomic.Int64
	clock := func() time.Time {
		return time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC).Add(time.Duration(n.Add(1)) * time.Millisecond)
	}
	mgr := live.NewManager(c, memory.New(), live.WithClock(clock))
	_, err = live.Sessions.Provide(c, mgr)
	require.NoError(t, err)
	return &host{t: t, root: root, c: c, mgr: mgr, logs: logs}
}

// load applies the external plugin with cfg.
func (h *host) load(cfg *external.Config) (*bus.Fiber, error) {
	return h.c.Plugin(external.New(), cfg)
}

// mustLoad applies the external plugin and requires it to be active.
func (h *host) mustLoad(cfg *external.Config) *bus.Fiber {
	h.t.Helper()
	f, err := h.load(cfg)
	require.NoError(h.t, err)
	require.Equal(h.t, bus.StateActive, f.State())
	return f
}

func (h *host) session() *live.Session {
	h.t.Helper()
	s, err := h.mgr.Create(context.Background())
	require.NoError(h.t, err)
	return s
}

// jsonl renders a session's log as the JSONL file a store would hold.
func jsonl(s *live.Session) []byte {
	b := session.AppendHeaderLine(nil, s.Info())
	for _, r := range s.Records() {
		b = r.AppendLine(b)
	}
	return b
}

// verify requires the session's log to pass the offline invariants.
func verify(t testing.TB, s *live.Session) {
	t.Helper()
	rep, err := invariants.Verify(bytes.NewReader(jsonl(s)))
	require.NoError(t, err)
	require.Empty(t, rep.Violations, "%v", rep.Violations)
}

// alive reports whether pid is a running process. An exited child of a
// dead parent may linger as a zombie until init reaps it; on Linux that
// counts as gone.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	// pid (comm) S ...: the state follows the last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i < 0 || i+2 >= len(b) || b[i+2] != 'Z'
}

// waitGone waits up to d for pid to stop running.
func waitGone(pid int, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if !alive(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return !alive(pid)
}

// tool returns the tool service called name.
func (h *host) tool(name string) agentloop.Tool {
	h.t.Helper()
	tl, err := bus.NewService[agentloop.Tool](agentloop.ToolServicePrefix + name).Get(h.c)
	require.NoError(h.t, err)
	return tl
}

// call runs a tool and requires it to succeed.
func (h *host) call(name, args string) string {
	h.t.Helper()
	out, err := h.tool(name).Execute(context.Background(), json.RawMessage(args))
	require.NoError(h.t, err)
	return out
}

// testPlugin is the config of the test plugin.
func testPlugin(env ...string) *external.Config {
	return &external.Config{Path: bins["testplugin"], Env: env}
}

// pidOf asks the test plugin for its process id.
func (h *host) pidOf() int {
	h.t.Helper()
	pid, err := strconv.Atoi(h.call("pid", "{}"))
	require.NoError(h.t, err)
	return pid
}

func sha256File(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}
