//go:build unix

package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
)

// The retry trials: `vigil run` runs a turn whose steps call
// keyed_effect (an idempotent tool of the effecttool plugin: one effect
// per idempotency key), and the plugin kills the process right after the
// k-th effect, k random; `vigil run --continue` then runs the call whose
// outcome the kill left unknown again, with its key. The effect of every
// key happened once, the killed call ran twice with one key, the log
// holds its tool/retry and tool/reconcile, and `vigil verify` and `vigil
// replay` pass on it.
func TestAnIdempotentEffectHappensOncePerKeyAcrossAKillAndAContinuation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes per trial")
	}
	srv := effectModelOf(t, 3, "keyed_effect")
	for i := range 10 {
		t.Run(fmt.Sprint(i), func(t *testing.T) { runRetryTrial(t, srv.URL) })
	}
}

func runRetryTrial(t *testing.T, modelURL string) {
	dir := t.TempDir()
	effects := filepath.Join(dir, "effects")
	k := 1 + rand.IntN(3)
	configure := func(killAfter int) {
		cfg := fmt.Sprintf(`plugins:
  - { name: store/jsonl, config: { dir: sessions } }
  - { name: provider/openai, config: { base_url: "%s/v1", api_key: k, model: m } }
  - { name: agent, config: { model: m, max_steps: 8 } }
  - { id: effects, name: external, config: { path: %q, config: { file: %q, kill_after: %d } } }
`, modelURL, effectTool.build(t), effects, killAfter)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "plugins.yaml"), []byte(cfg), 0o644))
	}
	vigil := func(args ...string) (string, error) {
		cmd := exec.Command(buildVigil(t), args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	configure(k)
	out, err := vigil("run", "act")
	require.Error(t, err, "not killed after effect %d:\n%s", k, out)
	logs, err := filepath.Glob(filepath.Join(dir, "sessions", "*.jsonl"))
	require.NoError(t, err)
	require.Len(t, logs, 1)
	id := strings.TrimSuffix(filepath.Base(logs[0]), ".jsonl")
	killed := effectKeys(t, effects)[k-1] // the call the kill cut short

	configure(0)
	out, err = vigil("run", "-s", id, "--continue")
	require.NoError(t, err, out)

	perKey := map[string]int{}
	for _, key := range effectKeys(t, effects) {
		perKey[key]++
	}
	for key, n := range perKey {
		assert.Equal(t, 1, n, "the effect of %s happened %d times", key, n)
	}
	runs := map[string]int{}
	b, err := os.ReadFile(effects + ".runs")
	require.NoError(t, err)
	for key := range strings.FieldsSeq(string(b)) {
		runs[key]++
	}
	assert.Equal(t, 2, runs[killed], "the killed call ran again, with its key")

	out, err = vigil("sessions", "export", id)
	require.NoError(t, err, out)
	var retries, reconciles int
	for l := range strings.Lines(out) {
		rec, err := session.DecodeRecord([]byte(strings.TrimSuffix(l, "\n")))
		if err != nil {
			continue // the header
		}
		switch rec.Type() {
		case session.TypeToolRetry:
			retries++
		case session.TypeToolReconcile:
			reconciles++
			rc, err := session.DecodeData[session.ToolReconcile](rec)
			require.NoError(t, err)
			assert.Equal(t, killed, session.IdempotencyKey(id, rc.ID))
			assert.Contains(t, rc.Content, "(already)")
		}
	}
	assert.Equal(t, 1, retries)
	assert.Equal(t, 1, reconciles)

	out, err = vigil("verify", id)
	assert.NoError(t, err, out)
	out, err = vigil("replay", id)
	assert.NoError(t, err, out)
}

// effectKeys returns the keys of the keyed effects, in order.
func effectKeys(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(file)
	require.NoError(t, err)
	var keys []string
	for l := range strings.Lines(string(b)) {
		if f := strings.Fields(l); len(f) == 2 {
			keys = append(keys, f[1])
		}
	}
	return keys
}
