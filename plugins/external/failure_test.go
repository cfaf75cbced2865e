//go:build unix

package external_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

func TestPluginCrashMidTurnDisposesItsFiberAndTheTurnGoesOn(t *testing.T) {
	h := newHost(t)
	// It validates user messages: failing open, its loss does not stop
	// the next turn (TestKilledPolicy… shows the default, fail: closed).
	cfg := testPlugin()
	cfg.Fail = external.FailOpen
	f := h.mustLoad(cfg)
	pid := h.pidOf()
	prov := scriptedProvider(t,
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "crash"}}},
		scripted.Reply{Text: "the tool broke"},
		scripted.Reply{Text: "still here"},
	)
	a := agentloop.New(h.c, agentloop.Config{}, agentloop.WithProvider(prov))
	sess := h.session()

	res, err := a.Run(context.Background(), sess, "crash it")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, "the tool broke", res.Content)
	results := ofType(sess.Records(), session.TypeToolResult)
	require.Len(t, results, 1)
	r, err := session.DecodeData[session.ToolResult](results[0])
	require.NoError(t, err)
	require.NotNil(t, r.Error)
	assert.Equal(t, external.CodeUnavailable, r.Error.Code)

	require.Eventually(t, func() bool { return f.State() == bus.StateFailed }, 5*time.Second, 10*time.Millisecond)
	assert.False(t, alive(pid))
	assert.Contains(t, h.logs.String(), "plugin process exited; its fiber fails")
	require.ErrorIs(t, f.Err(), external.ErrExited)
	assert.Contains(t, h.logs.String(), "crashing on purpose")
	_, err = bus.NewService[agentloop.Tool]("tool/echo").Get(h.c)
	require.ErrorIs(t, err, bus.ErrServiceMissing, "the crashed plugin's tools are withdrawn")

	// The host keeps running: the next turn works without the plugin.
	res, err = a.Run(context.Background(), sess, "again")
	require.NoError(t, err)
	assert.Equal(t, "still here", res.Content)
	verify(t, sess)
}

func TestCrashIsToldFromABrokenConnectionHoweverLongItsExitTakes(t *testing.T) {
	// The exit is observed only once the process's stderr is closed, here
	// 2s after the connection broke: longer than any fixed grace short
	// enough not to matter, as a busy machine can make it too.
	h := newHost(t)
	cfg := testPlugin("PATH") // to find sleep
	cfg.Fail = external.FailOpen
	f := h.mustLoad(cfg)
	_, err := h.tool("crash_leaving_child").Execute(context.Background(), json.RawMessage("{}"))
	var te *agentloop.ToolError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, external.CodeUnavailable, te.Code, "%v", err)
	awaitFailed(t, f)
}

func TestDisposeStopsThePluginProcess(t *testing.T) {
	h := newHost(t)
	f := h.mustLoad(testPlugin())
	pid := h.pidOf()
	require.True(t, alive(pid))
	require.NoError(t, f.Dispose())
	assert.True(t, waitGone(pid, 5*time.Second), "plugin process %d still running", pid)
	_, err := bus.NewService[agentloop.Tool]("tool/echo").Get(h.c)
	require.ErrorIs(t, err, bus.ErrServiceMissing)
	assert.NotContains(t, h.logs.String(), "disposing its fiber", "a disposal is not a crash")
}

func TestChecksum(t *testing.T) {
	sum := sha256File(t, bins["testplugin"])
	t.Run("a mismatch refuses to start the plugin", func(t *testing.T) {
		h := newHost(t)
		marker := filepath.Join(t.TempDir(), "started")
		cfg := testPlugin("VIGIL_TEST_MARKER=" + marker)
		cfg.SHA256 = strings.Repeat("0", 64)
		f, err := h.load(cfg)
		require.ErrorIs(t, err, external.ErrChecksum)
		assert.Contains(t, err.Error(), sum, "the error names the actual checksum")
		assert.Equal(t, bus.StateFailed, f.State())
		assert.NoFileExists(t, marker, "the binary never ran")
	})
	t.Run("a match starts it", func(t *testing.T) {
		h := newHost(t)
		marker := filepath.Join(t.TempDir(), "started")
		cfg := testPlugin("VIGIL_TEST_MARKER=" + marker)
		cfg.SHA256 = strings.ToUpper(sum)
		h.mustLoad(cfg)
		assert.FileExists(t, marker)
	})
}

func TestHandshakeFailuresAreExplained(t *testing.T) {
	script := filepath.Join(t.TempDir(), "not-a-plugin")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\necho 'no such thing here' >&2\nexit 2\n"), 0o755))
	// Its exit is observed 2s late: a child holds its stderr.
	lingering := filepath.Join(t.TempDir(), "lingering")
	require.NoError(t, os.WriteFile(lingering, []byte("#!/bin/sh\necho 'no such thing here' >&2\nsleep 2 >/dev/null &\nexit 2\n"), 0o755))
	cases := []struct {
		name string
		cfg  *external.Config
		is   []error
		msg  []string
	}{
		{"stray output on stdout", testPlugin("VIGIL_TEST_MODE=stray"),
			[]error{external.ErrHandshake, external.ErrStrayOutput}, []string{`wrote "hello from the plugin"`}},
		{"another protocol version", testPlugin("VIGIL_TEST_MODE=version"),
			[]error{external.ErrHandshake}, []string{"speaks plugin protocol version 99, this host speaks version 1"}},
		{"exits before the handshake", &external.Config{Path: script},
			[]error{external.ErrHandshake, external.ErrExited}, []string{"exited before the handshake", "no such thing here"}},
		{"exits before the handshake, its exit observed late", &external.Config{Path: lingering},
			[]error{external.ErrHandshake, external.ErrExited}, []string{"exited before the handshake", "no such thing here"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			f, err := h.load(tc.cfg)
			require.Error(t, err)
			for _, e := range tc.is {
				assert.ErrorIs(t, err, e)
			}
			for _, m := range tc.msg {
				assert.Contains(t, err.Error(), m)
			}
			assert.Equal(t, bus.StateFailed, f.State())
		})
	}
	t.Run("the version error names both versions", func(t *testing.T) {
		h := newHost(t)
		_, err := h.load(testPlugin("VIGIL_TEST_MODE=version"))
		var ve *external.VersionError
		require.ErrorAs(t, err, &ve)
		assert.Equal(t, 99, ve.Plugin)
		assert.Equal(t, 1, ve.Host)
		assert.Equal(t, bins["testplugin"], ve.Path)
	})
}

// The slow plugins below block for a minute, far beyond the timeouts: an
// answer at all shows the bound held, whatever the machine's load, and
// nothing is measured.
func TestSlowPluginIsBoundedByTheTimeout(t *testing.T) {
	t.Run("tool call", func(t *testing.T) {
		h := newHost(t)
		cfg := testPlugin()
		cfg.Timeout = 300 * time.Millisecond
		h.mustLoad(cfg)
		_, err := h.tool("sleep").Execute(context.Background(), json.RawMessage("{}"))
		var te *agentloop.ToolError
		require.ErrorAs(t, err, &te)
		assert.Equal(t, external.CodeTimeout, te.Code)
		assert.Contains(t, te.Message, "no answer within 300ms")
	})
	t.Run("validation", func(t *testing.T) {
		h := newHost(t)
		h.mustLoad(&external.Config{Path: bins["testplugin"], Timeout: 200 * time.Millisecond, Config: map[string]any{"slow_validate": 60_000}})
		sess := h.session()
		_, err := sess.Append(context.Background(), session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "hi"}})
		require.ErrorIs(t, err, external.ErrTimeout)
		assert.Equal(t, 0, sess.Len(), "an unanswered validation refuses the event")
	})
	t.Run("start", func(t *testing.T) {
		h := newHost(t)
		cfg := testPlugin("VIGIL_TEST_MODE=slowstart")
		cfg.StartTimeout = 300 * time.Millisecond
		_, err := h.load(cfg)
		require.ErrorIs(t, err, external.ErrHandshake)
		require.ErrorIs(t, err, external.ErrTimeout)
		assert.Contains(t, err.Error(), "did not complete the handshake within 300ms")
	})
	t.Run("a short call timeout does not bound the start", func(t *testing.T) {
		// Starting a process and its handshake take longer than answering
		// a call, the more so on a busy machine: the call timeout alone
		// must not fail the start.
		h := newHost(t)
		cfg := testPlugin("VIGIL_TEST_START_DELAY=500ms")
		cfg.Timeout = 100 * time.Millisecond
		h.mustLoad(cfg)
	})
	t.Run("the caller's deadline is the caller's error", func(t *testing.T) {
		h := newHost(t)
		h.mustLoad(testPlugin())
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_, err := h.tool("sleep").Execute(ctx, json.RawMessage("{}"))
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.False(t, errors.Is(err, external.ErrTimeout))
		// The plugin is still usable while the abandoned call runs on.
		assert.Equal(t, "{}", h.call("echo", "{}"))
	})
}

func TestEnvAllowList(t *testing.T) {
	t.Setenv("VIGIL_TEST_PASSED", "yes")
	t.Setenv("VIGIL_TEST_SECRET", "hunter2")
	h := newHost(t)
	h.mustLoad(testPlugin("VIGIL_TEST_PASSED", "VIGIL_TEST_SET=x=y", "VIGIL_TEST_UNSET"))
	got := h.call("env", `{"names":["VIGIL_TEST_PASSED","VIGIL_TEST_SET","VIGIL_TEST_UNSET","VIGIL_TEST_SECRET","HOME"]}`)
	assert.Equal(t, `VIGIL_TEST_PASSED="yes"(true) VIGIL_TEST_SET="x=y"(true) VIGIL_TEST_UNSET=""(false) VIGIL_TEST_SECRET=""(false) HOME=""(false)`, got)
}

func TestApplyFailures(t *testing.T) {
	cases := []struct {
		name string
		cfg  *external.Config
		msg  string
	}{
		{"no path", &external.Config{}, "path is required"},
		{"bad checksum", &external.Config{Path: bins["units"], SHA256: "abc"}, "sha256 must be 64 hex digits"},
		{"negative timeout", &external.Config{Path: bins["units"], Timeout: -1}, "timeout must not be negative"},
		{"env without a name", &external.Config{Path: bins["units"], Env: []string{"=x"}}, `env entry "=x" has no name`},
		{"missing binary", &external.Config{Path: "./no/such/plugin"}, "no such file"},
		{"not executable", &external.Config{Path: "main_test.go"}, "not an executable file"},
		{"config the plugin refuses", &external.Config{Path: bins["units"], Config: map[string]any{"precision": 99}}, "precision must be between 1 and 17"},
		{"unknown config key", &external.Config{Path: bins["units"], Config: map[string]any{"precison": 3}}, `unknown field "precison"`},
		{"configure fails", &external.Config{Path: bins["testplugin"], Config: map[string]any{"fail_configure": true}}, "configure refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			f, err := h.load(tc.cfg)
			require.ErrorContains(t, err, tc.msg)
			require.NotNil(t, f)
			assert.Equal(t, bus.StateFailed, f.State())
		})
	}
}

func TestTwoPluginsCannotProvideTheSameTool(t *testing.T) {
	h := newHost(t)
	h.mustLoad(testPlugin())
	f, err := h.load(testPlugin())
	require.ErrorIs(t, err, bus.ErrServiceDuplicate)
	assert.Equal(t, bus.StateFailed, f.State())
	assert.Equal(t, "{}", h.call("echo", "{}"), "the first one keeps working")
}
