//go:build unix

package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/creack/pty"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunWithoutAPromptOnATerminalSaysItReadsStdin: `vigil run` with no
// prompt, typed at a terminal, says it reads the prompt from stdin (and
// how to end it) instead of waiting silently; the prompt typed then runs.
func TestRunWithoutAPromptOnATerminalSaysItReadsStdin(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(`plugins:
  - name: store/memory
  - name: provider/scripted
    config: { script: [ { text: "typed answer" } ] }
  - name: agent
    config: { model: scripted }
`), 0o644))
	ptmx, tty, err := pty.Open()
	require.NoError(t, err)
	defer ptmx.Close()
	defer tty.Close()

	out, errOut := &lineBuffer{}, &lineBuffer{}
	e := &env{stdin: tty, stdout: out, stderr: errOut, getenv: func(string) string { return "" }}
	done := make(chan int, 1)
	go func() { done <- run(context.Background(), e, []string{"run", "-c", cfg}) }()
	errOut.waitFor(t, "reading the prompt from stdin (end it with Ctrl-D")
	// A line, then Ctrl-D at the start of the next: the end of input.
	_, err = ptmx.Write([]byte("hello\n\x04"))
	require.NoError(t, err)
	assert.Equal(t, exitOK, <-done, "%s", errOut.String())
	assert.Contains(t, out.String(), "typed answer")
}

// TestRunWithAPromptOnStdinPipeSaysNothing: a prompt piped in is read
// without the terminal's note.
func TestRunWithAPromptPipedSaysNothingAboutStdin(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("plugins:\n  - name: store/memory\n  - name: provider/scripted\n  - name: agent\n    config: { model: scripted }\n"), 0o644))
	r, w, err := os.Pipe()
	require.NoError(t, err)
	_, err = w.WriteString("hello\n")
	require.NoError(t, err)
	require.NoError(t, w.Close())
	defer r.Close()
	out, errOut := &lineBuffer{}, &lineBuffer{}
	e := &env{stdin: r, stdout: out, stderr: errOut, getenv: func(string) string { return "" }}
	assert.Equal(t, exitOK, run(context.Background(), e, []string{"run", "-c", cfg}), "%s", errOut.String())
	assert.NotContains(t, errOut.String(), "reading the prompt")
}
