package main

import (
	"bufio"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
)

// lineBuffer collects what a command writes and lets a test wait for a
// line.
type lineBuffer struct {
	mu   sync.Mutex
	data strings.Builder
}

func (b *lineBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data.Write(p)
}

func (b *lineBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.data.String()
}

func (b *lineBuffer) waitFor(t *testing.T, s string) {
	t.Helper()
	require.Eventually(t, func() bool { return strings.Contains(b.String(), s) }, 20*time.Second, 10*time.Millisecond, "waiting for %q in:\n%s", s, b.String())
}

const chatConfig = `plugins:
  - name: store/jsonl
    config: { dir: sessions }
  - name: provider/scripted
    config: { script: [ { text: "first answer" } ], repeat: true }
  - name: agent
    config: { system: "SYSTEM", model: scripted }
  - name: tools/calc
  - name: invariants
`

// TestChatReloadsChangedPluginOnly edits plugins.yaml under a running chat:
// the changed entry (agent) is re-applied, the others keep their fibers,
// and the next turn, run by the new loop instance, logs the new header
// with reason resume.
func TestChatReloadsChangedPluginOnly(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(chatConfig), 0o644))
	t.Chdir(dir)

	inR, inW := io.Pipe()
	out, errOut := &lineBuffer{}, &lineBuffer{}
	e := &env{stdin: inR, stdout: out, stderr: errOut, getenv: func(string) string { return "" }}
	done := make(chan error, 1)
	go func() { done <- cmdChat(context.Background(), e, chatOptions{cfg: cfg}) }()
	in := bufio.NewWriter(inW)
	say := func(s string) {
		_, err := in.WriteString(s + "\n")
		require.NoError(t, err)
		require.NoError(t, in.Flush())
	}

	say("hello")
	out.waitFor(t, "first answer")
	time.Sleep(200 * time.Millisecond) // let the watcher settle
	require.NoError(t, os.WriteFile(cfg, []byte(strings.Replace(chatConfig, "SYSTEM", "CHANGED", 1)), 0o644))
	errOut.waitFor(t, "reloaded")
	// Only what happened is named, on a line of its own.
	assert.Contains(t, errOut.String(), "\nreloaded "+cfg+": updated agent\n")

	say("again")
	require.Eventually(t, func() bool { return strings.Count(out.String(), "first answer") == 2 }, 20*time.Second, 10*time.Millisecond)

	// A broken edit is reported and the running composition kept.
	require.NoError(t, os.WriteFile(cfg, []byte(chatConfig+"  - nmae: x\n"), 0o644))
	errOut.waitFor(t, "keeping the running plugins")
	say("third")
	require.Eventually(t, func() bool { return strings.Count(out.String(), "first answer") == 3 }, 20*time.Second, 10*time.Millisecond)

	say("/exit")
	require.NoError(t, <-done)

	st, err := jsonl.Open(filepath.Join(dir, "sessions"))
	require.NoError(t, err)
	defer st.Close()
	infos, err := st.List(context.Background())
	require.NoError(t, err)
	require.Len(t, infos, 1)
	log, err := st.Load(context.Background(), infos[0].ID)
	require.NoError(t, err)
	var reasons []string
	for _, r := range log.Records {
		if r.Type() == session.TypeRequestHeader {
			h, err := session.DecodeData[session.RequestHeader](r)
			require.NoError(t, err)
			reasons = append(reasons, h.Reason+":"+h.Header.System)
		}
	}
	assert.Equal(t, []string{"initial:SYSTEM", "resume:CHANGED"}, reasons)
}
