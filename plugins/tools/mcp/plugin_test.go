package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/tools/mcp"
	"github.com/vigil-run/vigil/plugins/tools/mcp/internal/testserver"
	"github.com/vigil-run/vigil/session"
)

func TestModuleIsRegisteredWithItsConfig(t *testing.T) {
	m, ok := bus.LookupModule(mcp.Name)
	require.True(t, ok)
	assert.IsType(t, &mcp.Config{}, m.Config())
	assert.Equal(t, mcp.Plugin, m.New())
}

func TestPluginProvidesTheServersToolsUntilDisposed(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := tr.config(t, "srv_")
			h := newHost(t)
			f := h.mcp(cfg)
			assert.Equal(t, []string{"srv_add_tool", "srv_echo", "srv_fail", "srv_getenv", "srv_getwd", "srv_hang", "srv_image", "srv_key", "srv_remove_tool", "srv_roots"}, h.toolNames())

			echo := h.tool("srv_echo")
			spec := echo.Spec()
			assert.Equal(t, "srv_echo", spec.Name)
			assert.Equal(t, "Echo the text back.", spec.Description)
			var schema struct {
				Type       string                     `json:"type"`
				Properties map[string]json.RawMessage `json:"properties"`
				Required   []string                   `json:"required"`
			}
			require.NoError(t, json.Unmarshal(spec.Parameters, &schema))
			assert.Equal(t, "object", schema.Type)
			assert.Contains(t, schema.Properties, "text")
			assert.Equal(t, []string{"text"}, schema.Required)

			// Read-only tools may run alongside others; the rest may not.
			assert.True(t, echo.(agentloop.ConcurrencySafe).ConcurrencySafe())
			assert.False(t, h.tool("srv_fail").(agentloop.ConcurrencySafe).ConcurrencySafe())

			require.NoError(t, f.Dispose())
			assert.Empty(t, h.toolNames())
		})
	}
}

func TestIncludeAndExcludeSelectTools(t *testing.T) {
	cases := []struct {
		name             string
		include, exclude []string
		want             []string
	}{
		{"include", []string{"echo", "get*"}, nil, []string{"echo", "getenv", "getwd"}},
		{"exclude", nil, []string{"*_tool", "admin_*", "hang", "image", "key", "roots"}, []string{"echo", "fail", "getenv", "getwd"}},
		{"both", []string{"*e*"}, []string{"*_*", "getwd", "key"}, []string{"echo", "getenv", "image"}},
		{"none match", []string{"nothing*"}, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			h.mcp(&mcp.Config{Command: serverBin, Include: tc.include, Exclude: tc.exclude})
			assert.Equal(t, tc.want, h.toolNames())
		})
	}
}

func TestTurnCallsAnMCPTool(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := tr.config(t, "srv_")
			h := newHost(t, callOf("srv_echo", map[string]any{"text": "hello"}), say("The server said hello."))
			h.mcp(cfg)
			s := h.session()
			res := h.turn(context.Background(), s, "echo hello", session.ReasonCompleted)
			assert.Equal(t, "The server said hello.", res.Content)

			got := results(t, s)
			require.Len(t, got, 1)
			assert.Equal(t, session.ToolResult{ID: got[0].ID, Name: "srv_echo", Content: "echo: hello"}, got[0])

			// The model was offered the server's tools, schemas included.
			hdr := decode[session.RequestHeader](t, ofType(s, session.TypeRequestHeader)[0])
			assert.Equal(t, session.HeaderInitial, hdr.Reason)
			var names []string
			for _, ts := range hdr.Header.Tools {
				names = append(names, ts.Name)
				assert.NotEmpty(t, ts.Parameters, ts.Name)
			}
			assert.Contains(t, names, "srv_echo")
			verify(t, s)
		})
	}
}

func TestEnvIsPassedToTheServerProcess(t *testing.T) {
	h := newHost(t)
	cfg := stdio("", "")
	cfg.Env = map[string]string{"VIGIL_MCP_TEST": "from plugins.yaml"}
	h.mcp(cfg)
	got, err := h.call("getenv", `{"name":"VIGIL_MCP_TEST"}`)
	require.NoError(t, err)
	assert.Equal(t, "from plugins.yaml", got)
}

func TestCommandRunsInDir(t *testing.T) {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	h := newHost(t)
	cfg := stdio("", "")
	cfg.Dir = dir
	h.mcp(cfg)
	got, err := h.call("getwd", `{}`)
	require.NoError(t, err)
	assert.Equal(t, dir, got)
}

func TestErrorsBecomeErrorToolResults(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := tr.config(t, "srv_")
			h := newHost(t,
				callOf("srv_fail", map[string]any{"message": "disk on fire"}),
				callOf("srv_echo", map[string]any{"text": 42}), // not a string: refused by the server
				say("Both failed."))
			h.mcp(cfg)
			s := h.session()
			h.turn(context.Background(), s, "fail twice", session.ReasonCompleted)

			got := results(t, s)
			require.Len(t, got, 2)
			require.NotNil(t, got[0].Error)
			assert.Equal(t, mcp.CodeToolError, got[0].Error.Code)
			assert.Equal(t, "disk on fire", got[0].Error.Message)
			assert.Empty(t, got[0].Content)
			require.NotNil(t, got[1].Error)
			// The server validates arguments against the schema it gave.
			assert.Equal(t, mcp.CodeToolError, got[1].Error.Code)
			assert.Contains(t, got[1].Error.Message, "/properties/text")
			verify(t, s)
		})
	}
}

func TestCallOfAToolTheServerNoLongerHasIsARequestError(t *testing.T) {
	h := newHost(t)
	h.mcp(stdio("", ""))
	stale := h.tool("echo") // as a step that started before the removal holds it
	_, err := h.call("remove_tool", `{"name":"echo"}`)
	require.NoError(t, err)

	_, err = stale.Execute(context.Background(), json.RawMessage(`{"text":"x"}`))
	var te *agentloop.ToolError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, mcp.CodeRequestFailed, te.Code)
	assert.Contains(t, te.Message, "echo")
}

func TestNonTextContentIsSummarised(t *testing.T) {
	h := newHost(t)
	h.mcp(stdio("", ""))
	got, err := h.call("image", `{}`)
	require.NoError(t, err)
	assert.Equal(t, "a picture:\n[image image/png, 1234 bytes]", got)
	assert.Equal(t, 1234, testserver.ImageSize)
}

func TestListChangeUpdatesTheToolsAndTheNextHeader(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := tr.config(t, "srv_")
			h := newHost(t,
				callOf("srv_add_tool", map[string]any{"name": "late"}), say("Added."),
				callOf("srv_late", nil), say("It works."),
				callOf("srv_remove_tool", map[string]any{"name": "late"}), say("Removed."),
				say("Nothing left to do."))
			h.mcp(cfg)
			s := h.session()

			h.turn(context.Background(), s, "add a tool", session.ReasonCompleted)
			require.Eventually(t, func() bool { return contains(h.toolNames(), "srv_late") }, 10*time.Second, 5*time.Millisecond)

			h.turn(context.Background(), s, "use it", session.ReasonCompleted)
			got := results(t, s)
			assert.Equal(t, "late works", got[len(got)-1].Content)

			h.turn(context.Background(), s, "remove it", session.ReasonCompleted)
			require.Eventually(t, func() bool { return !contains(h.toolNames(), "srv_late") }, 10*time.Second, 5*time.Millisecond)
			h.turn(context.Background(), s, "anything?", session.ReasonCompleted)

			// initial; change when late is added; change when it is gone;
			// turn 2 offers the same tools as the step before it.
			var reasons []string
			var turns []int
			var withLate []bool
			for _, r := range ofType(s, session.TypeRequestHeader) {
				hdr := decode[session.RequestHeader](t, r)
				reasons = append(reasons, hdr.Reason)
				turns = append(turns, r.Turn())
				withLate = append(withLate, offers(hdr.Header, "srv_late"))
			}
			assert.Equal(t, []string{session.HeaderInitial, session.HeaderChange, session.HeaderChange}, reasons)
			if tr.name == "stdio" {
				// Over stdio each change, announced before the call's
				// result, is in force from the step after the call. Over
				// HTTP the announcement travels on another stream, so it
				// may come in after the result.
				assert.Equal(t, []int{1, 1, 3}, turns)
			}
			assert.Equal(t, []bool{false, true, false}, withLate)
			verify(t, s)
		})
	}
}

func TestServerSideToolChangesAreFollowed(t *testing.T) {
	cfg, srv := httpServer(t, "", nil)
	h := newHost(t)
	h.mcp(cfg)
	testserver.Add(srv, "fresh")
	require.Eventually(t, func() bool { return contains(h.toolNames(), "fresh") }, 10*time.Second, 5*time.Millisecond)
	got, err := h.call("fresh", `{}`)
	require.NoError(t, err)
	assert.Equal(t, "fresh works", got)

	srv.RemoveTools("echo", "fresh")
	require.Eventually(t, func() bool {
		n := h.toolNames()
		return !contains(n, "fresh") && !contains(n, "echo")
	}, 10*time.Second, 5*time.Millisecond)
	assert.Contains(t, h.toolNames(), "getenv")
}

func TestTwoServersWithTheSameToolsNeedPrefixes(t *testing.T) {
	h := newHost(t)
	h.mcp(stdio("", ""))
	f, err := h.c.Plugin(mcp.Plugin, stdio("", ""))
	require.ErrorIs(t, err, bus.ErrServiceDuplicate)
	assert.ErrorContains(t, err, "prefix")
	assert.Equal(t, bus.StateFailed, f.State())
	assert.Len(t, h.toolNames(), 10, "the failed apply withdrew what it provided")

	h.mcp(stdio("b_", ""))
	assert.Contains(t, h.toolNames(), "b_echo")
	assert.Contains(t, h.toolNames(), "echo")
}

func TestConnectFailuresFailTheApply(t *testing.T) {
	cases := []struct {
		name string
		cfg  *mcp.Config
	}{
		{"missing command", &mcp.Config{Command: "/nonexistent/mcp-server"}},
		{"not an MCP server", &mcp.Config{Command: "sh", Args: []string{"-c", "echo nonsense; exit 3"}}},
		{"nobody listening", &mcp.Config{URL: "http://127.0.0.1:1/mcp", Timeout: 2 * time.Second}},
		{"invalid config", &mcp.Config{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, say("No tools, fine."))
			f, err := h.c.Plugin(mcp.Plugin, tc.cfg)
			require.Error(t, err)
			assert.Equal(t, bus.StateFailed, f.State())
			var pe *bus.PluginError
			require.True(t, errors.As(f.Err(), &pe))
			assert.Empty(t, h.toolNames())

			// The host is unharmed.
			s := h.session()
			h.turn(context.Background(), s, "hi", session.ReasonCompleted)
			verify(t, s)
		})
	}
}

func offers(h session.Header, name string) bool {
	for _, t := range h.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// TestListChangeAnnouncedBeforeAResultIsInForceForTheNextRequest: the
// server announces its new tool before it answers the call that added
// it, so the next request of the same turn offers it — every time, not
// only when the re-list happens to win the race with the loop.
func TestListChangeAnnouncedBeforeAResultIsInForceForTheNextRequest(t *testing.T) {
	h := newHost(t,
		callOf("srv_add_tool", map[string]any{"name": "late"}),
		callOf("srv_late", nil),
		say("It works."))
	h.mcp(stdio("srv_", ""))
	s := h.session()
	h.turn(context.Background(), s, "add a tool and use it", session.ReasonCompleted)

	var withLate []bool
	for _, r := range ofType(s, session.TypeRequestHeader) {
		withLate = append(withLate, offers(decode[session.RequestHeader](t, r).Header, "srv_late"))
	}
	assert.Equal(t, []bool{false, true}, withLate, "step 2's request offers the new tool")
	got := results(t, s)
	require.Len(t, got, 2)
	assert.Equal(t, "added late", got[0].Content)
	assert.Nil(t, got[1].Error)
	assert.Equal(t, "late works", got[1].Content)
	verify(t, s)
}

// A tool whose name the model APIs would refuse (empty, a path, a dot, too
// long) never reaches the model: it is skipped, with the reason logged, and
// the server's other tools are offered.
func TestToolsWithInvalidNamesAreSkipped(t *testing.T) {
	cfg, srv := httpServer(t, "", nil)
	bad := []string{"", "../../etc/passwd", "files.read", "with space", strings.Repeat("a", 65)}
	for _, name := range bad {
		testserver.Add(srv, name)
	}
	testserver.Add(srv, strings.Repeat("b", 64))
	h := newHost(t, callOf("echo", map[string]any{"text": "hi"}), say("done"))
	h.mcp(cfg)
	names := h.toolNames()
	for _, name := range bad {
		assert.NotContains(t, names, name)
	}
	assert.Contains(t, names, strings.Repeat("b", 64))
	assert.Contains(t, names, "echo")
	logs := h.logs.String()
	assert.Contains(t, logs, "the name is empty")
	assert.Contains(t, logs, `../../etc/passwd\" holds '.'`)
	assert.Contains(t, logs, `files.read\" holds '.'`)
	assert.Contains(t, logs, "is 65 bytes long, more than 64")
	assert.Equal(t, 5, strings.Count(logs, "skipping a tool of the server"))

	s := h.session()
	h.turn(context.Background(), s, "echo hi", session.ReasonCompleted)
	for _, r := range ofType(s, session.TypeRequestHeader) {
		hd := decode[session.RequestHeader](t, r)
		for _, spec := range hd.Header.Tools {
			assert.NoError(t, agentloop.CheckToolName(spec.Name), "the model was offered %q", spec.Name)
		}
	}
	verify(t, s)
}
