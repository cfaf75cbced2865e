package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/session"
)

// testStatus is a live status on buffers whose clock the test moves and
// whose line the test redraws.
func testStatus(shared bool) (*status, *strings.Builder, *strings.Builder, *time.Time) {
	out, errOut := &strings.Builder{}, &strings.Builder{}
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	s := &status{
		stdout: out, stderr: errOut, live: true, shared: shared,
		width: func() int { return 0 }, now: func() time.Time { return now },
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	return s, out, errOut, &now
}

func (s *status) draw() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.redrawLocked()
}

// TestStatusShowsEachWaitWithItsTime: a wait shows once it has lasted a
// moment, with its elapsed time, beside the others; it goes when it ends,
// and the line is erased when none is left.
func TestStatusShowsEachWaitWithItsTime(t *testing.T) {
	s, _, errOut, now := testStatus(false)
	endModel := s.begin("waiting for the model")
	*now = now.Add(100 * time.Millisecond)
	s.draw()
	assert.Empty(t, errOut.String(), "too short a wait to show")

	*now = now.Add(1400 * time.Millisecond)
	endTool := s.begin("running hang")
	*now = now.Add(time.Second)
	s.draw()
	assert.Equal(t, "\r| waiting for the model 2.5s, running hang 1.0s\x1b[K", errOut.String())

	errOut.Reset()
	endModel()
	assert.Equal(t, "\r| running hang 1.0s\x1b[K", errOut.String())
	errOut.Reset()
	*now = now.Add(12 * time.Second)
	s.draw()
	assert.Equal(t, "\r| running hang 13s\x1b[K", errOut.String())
	errOut.Reset()
	endTool()
	assert.Equal(t, eraseLine, errOut.String())
}

// TestStatusKeepsOffAPartialLine: on a terminal stdout shares, the line
// is erased before text and not drawn while the text's line is open; a
// note ends that line, stays, and the status comes back below it.
func TestStatusKeepsOffAPartialLine(t *testing.T) {
	s, out, errOut, now := testStatus(true)
	end := s.begin("waiting for the model")
	*now = now.Add(time.Second)
	s.draw()
	require.Equal(t, "\r| waiting for the model 1.0s\x1b[K", errOut.String())

	s.text("Hello")
	assert.Equal(t, "\r| waiting for the model 1.0s\x1b[K"+eraseLine, errOut.String(), "erased before the text")
	errOut.Reset()
	s.draw()
	assert.Empty(t, errOut.String(), "not drawn on the text's line")

	s.note("→ %s", "calc")
	assert.Equal(t, "Hello\n", out.String(), "the note ends the answer's line")
	assert.Equal(t, "→ calc\n\r| waiting for the model 1.0s\x1b[K", errOut.String())
	end()
}

// TestStatusHeld: while a chat reads a line, nothing is drawn.
func TestStatusHeld(t *testing.T) {
	s, _, errOut, now := testStatus(false)
	s.hold(true)
	defer s.begin("starting mcp (tools/mcp)")()
	*now = now.Add(time.Second)
	s.draw()
	assert.Empty(t, errOut.String())
	s.hold(false)
	assert.Equal(t, "\r| starting mcp (tools/mcp) 1.0s\x1b[K", errOut.String())
}

func TestLeaseLabelNamesTheHolderAndTheTimeLeft(t *testing.T) {
	now := time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name string
		err  error
		at   time.Time
		want string
	}{
		{"a file lock", &session.LockError{Holder: "pid 7 on h since 2026-12-01T07:59:00Z", Err: session.ErrLocked}, now,
			"waiting for session S, held by pid 7 on h since 2026-12-01T07:59:00Z"},
		{"a lease", &session.LockError{Holder: "vigil@h:7#1", Expires: now.Add(12 * time.Second), Err: session.ErrLocked}, now,
			"waiting for session S, held by vigil@h:7#1 (its lease expires in 12s unless renewed)"},
		{"a lease past its expiry", &session.LockError{Holder: "vigil@h:7#1", Expires: now.Add(12 * time.Second), Err: session.ErrLocked}, now.Add(13 * time.Second),
			"waiting for session S, held by vigil@h:7#1 (its holder renewed the lease)"},
		{"a store that does not say", fmt.Errorf("x: %w", session.ErrLocked), now,
			"waiting for session S, held by another process"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, leaseLabel("S", fmt.Errorf("wrapped: %w", tt.err))(tt.at))
		})
	}
}

func TestReloadMessageNamesOnlyWhatHappened(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    config.ReloadResult
		want string
	}{
		{"one change", config.ReloadResult{Changes: config.Changes{Updated: []string{"agent"}, Kept: []string{"a", "b"}}},
			"reloaded p.yaml: updated agent"},
		{"disabled", config.ReloadResult{Changes: config.Changes{Disabled: []string{"tools/calc"}, Applied: []string{"x", "y"}}},
			"reloaded p.yaml: applied x, y; disabled tools/calc"},
		{"nothing", config.ReloadResult{Changes: config.Changes{Kept: []string{"a"}}},
			"reloaded p.yaml: nothing changed"},
		{"a broken file", config.ReloadResult{Err: errors.New("p.yaml:3:4: unknown field")},
			"reload: p.yaml:3:4: unknown field (keeping the running plugins)"},
		{"an entry that failed", config.ReloadResult{Changes: config.Changes{Applied: []string{"x"}}, Err: errors.New("x: boom")},
			"reloaded p.yaml: applied x\nreload: x: boom"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, reloadMessage("p.yaml", tt.r))
		})
	}
}

// TestHistoryIsPrivateInTheStateDir: the chat's history is a file of the
// user's state directory that only the user can read.
func TestHistoryIsPrivateInTheStateDir(t *testing.T) {
	state, home := t.TempDir(), t.TempDir()
	env := func(vars map[string]string) *env { return &env{getenv: func(k string) string { return vars[k] }} }

	p := historyPath(env(map[string]string{"XDG_STATE_HOME": state, "HOME": home}))
	assert.Equal(t, filepath.Join(state, "vigil", "chat_history"), p)
	fi, err := os.Stat(p)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())

	assert.Equal(t, filepath.Join(home, ".local", "state", "vigil", "chat_history"), historyPath(env(map[string]string{"HOME": home})))
	assert.Equal(t, filepath.Join(home, ".local", "state", "vigil", "chat_history"), historyPath(env(map[string]string{"XDG_STATE_HOME": "relative", "HOME": home})),
		"a relative XDG_STATE_HOME is ignored, as the spec says")
}

// TestStatusPutsLogLinesAboveIt: a log line does not land in the status
// line: it is erased first and drawn again below.
func TestStatusPutsLogLinesAboveIt(t *testing.T) {
	s, _, errOut, now := testStatus(false)
	defer s.begin("starting mcp (tools/mcp)")()
	*now = now.Add(time.Second)
	s.draw()
	log := newLoggerTo(&env{getenv: func(string) string { return "" }, stderr: errOut}, s.logWriter())
	log.Warn("slow server")
	assert.Regexp(t, `^\r\| starting mcp \(tools/mcp\) 1\.0s\x1b\[K\r\x1b\[K[^\r]*\[WARN\]  vigil: slow server\n\r\| starting mcp`, errOut.String())
}
