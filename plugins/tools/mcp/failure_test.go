//go:build unix

package mcp_test

import (
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/tools/mcp"
	"github.com/vigil-run/vigil/session"
)

func TestKilledServerMidCallFailsThePluginNotTheHost(t *testing.T) {
	h := newHost(t, callOf("srv_hang", nil), say("The server is gone."), say("Still here."))
	dir := t.TempDir()
	f := h.mcp(stdio("srv_", dir))
	pid := readPid(t, dir, "pid")
	s := h.session()

	done := make(chan *struct{}, 1)
	go func() {
		h.turn(context.Background(), s, "hang", session.ReasonCompleted)
		done <- nil
	}()
	waitFile(t, filepath.Join(dir, "hang"))
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the turn did not end after the server died")
	}

	got := results(t, s)
	require.Len(t, got, 1)
	require.NotNil(t, got[0].Error)
	assert.Equal(t, mcp.CodeUnavailable, got[0].Error.Code)

	// The fiber failed with the cause, logged, and its tools are gone.
	require.Eventually(t, func() bool { return f.State() == bus.StateFailed }, 10*time.Second, 5*time.Millisecond)
	require.ErrorIs(t, f.Err(), mcp.ErrServerExited)
	assert.ErrorContains(t, f.Err(), "signal: killed")
	assert.Empty(t, h.toolNames())
	// One error in the log, the plugin's failure with its cause; not a
	// second one from the connection for the same event.
	var errorLines []string
	for _, l := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(l, "[ERROR]") {
			errorLines = append(errorLines, l)
		}
	}
	require.Len(t, errorLines, 1, h.logs.String())
	assert.Contains(t, errorLines[0], "plugin failed")
	assert.Contains(t, errorLines[0], "signal: killed")
	assert.False(t, alive(pid))

	// The host goes on: the next turn runs without the tools, and says so
	// in its header.
	h.turn(context.Background(), s, "still there?", session.ReasonCompleted)
	hdrs := ofType(s, session.TypeRequestHeader)
	last := decode[session.RequestHeader](t, hdrs[len(hdrs)-1])
	assert.Equal(t, session.HeaderChange, last.Reason)
	assert.Empty(t, last.Header.Tools)
	verify(t, s)

	// A config update connects again.
	require.NoError(t, f.Update(stdio("srv_", dir)))
	assert.Equal(t, bus.StateActive, f.State())
	assert.Contains(t, h.toolNames(), "srv_echo")
}

func TestCallIsBoundedByTheTimeout(t *testing.T) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := tr.config(t, "srv_")
			h := newHost(t, callOf("srv_hang", nil), callOf("srv_echo", map[string]any{"text": "after"}), say("Done."))
			cfg.Timeout = 200 * time.Millisecond
			f := h.mcp(cfg)
			s := h.session()
			start := time.Now()
			h.turn(context.Background(), s, "hang", session.ReasonCompleted)
			assert.Less(t, time.Since(start), 5*time.Second)

			got := results(t, s)
			require.Len(t, got, 2)
			require.NotNil(t, got[0].Error)
			assert.Equal(t, mcp.CodeTimeout, got[0].Error.Code)
			assert.Contains(t, got[0].Error.Message, "200ms")
			// The server is still there.
			assert.Equal(t, "echo: after", got[1].Content)
			assert.Equal(t, bus.StateActive, f.State())
			verify(t, s)
		})
	}
}

func TestCancelledTurnCancelsTheCall(t *testing.T) {
	hanging := make(chan struct{}, 1)
	cfg, _ := httpServer(t, "srv_", func() { hanging <- struct{}{} })
	h := newHost(t, callOf("srv_hang", nil), callOf("srv_echo", map[string]any{"text": "next"}), say("Done."))
	h.mcp(cfg)
	s := h.session()

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-hanging
		cancel()
	}()
	h.turn(ctx, s, "hang", session.ReasonAborted)
	got := results(t, s)
	require.Len(t, got, 1)
	require.NotNil(t, got[0].Error)
	assert.Equal(t, session.CodeToolOutcomeUnknown, got[0].Error.Code)

	// The connection survived the cancelled call.
	h.turn(context.Background(), s, "again", session.ReasonCompleted)
	got = results(t, s)
	assert.Equal(t, "echo: next", got[len(got)-1].Content)
	verify(t, s)
}

func TestDisposeEndsTheServerProcess(t *testing.T) {
	h := newHost(t)
	dir := t.TempDir()
	f := h.mcp(stdio("", dir))
	pid := readPid(t, dir, "pid")
	require.True(t, alive(pid))
	require.NoError(t, f.Dispose())
	assert.False(t, alive(pid), "the server outlived its fiber")
	assert.Equal(t, bus.StateDisposed, f.State())
	assert.NotContains(t, h.logs.String(), "server connection lost", "a dispose is not a failure")
}

func TestDisposeKillsAStubbornServerAndItsProcessGroup(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the graceful close (about 4s)")
	}
	h := newHost(t)
	dir := t.TempDir()
	cfg := stdio("", dir)
	cfg.Env["MCPSERVER_STUBBORN"] = "1"
	f := h.mcp(cfg)
	pid, child := readPid(t, dir, "pid"), readPid(t, dir, "child")
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	require.True(t, alive(pid))
	require.True(t, alive(child))

	require.NoError(t, f.Dispose())
	assert.False(t, alive(pid), "the server outlived its fiber")
	require.Eventually(t, func() bool { return !alive(child) }, 5*time.Second, 10*time.Millisecond,
		"the server's child outlived the fiber")
}
