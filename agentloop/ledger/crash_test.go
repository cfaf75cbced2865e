package ledger_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/agentloop/ledger"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
)

// The crash tests run this test binary again as a child process that
// runs calls of a refund tool with ledger.Do on a JSONL store, and kill
// it (SIGKILL: nothing buffered is written, no deferred call runs).
const (
	childEnv  = "LEDGER_CRASH_CHILD" // the kill point: effect, recorded, none, loop
	dirEnv    = "LEDGER_CRASH_DIR"   // the store's directory, with the effects file
	keyedEnv  = "LEDGER_CRASH_KEYED" // "1": the refund service dedupes by key
	callsEnv  = "LEDGER_CRASH_CALLS" // loop: how many calls
	effectsFn = "effects"
)

// crashChild runs in the child process: mode names where it kills
// itself (effect: after the refund, before its result is recorded;
// recorded: after the record, before Do returns; none: nowhere), or
// loop, which runs calls until its parent kills it. It prints each
// call's result, one line each.
func crashChild(mode string) int {
	ctx := context.Background()
	dir := os.Getenv(dirEnv)
	store, err := jsonl.Open(dir)
	if err == nil {
		err = store.Create(ctx, session.Info{ID: "s1", Created: epoch})
	}
	if err != nil && !errors.Is(err, session.ErrExists) {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	die := func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL); select {} }
	if mode == "recorded" {
		ledger.SetAfterRecord(die)
	}
	calls := 1
	if mode == "loop" {
		calls, _ = strconv.Atoi(os.Getenv(callsEnv))
		fmt.Println("ready")
	}
	keyed := os.Getenv(keyedEnv) == "1"
	for i := range calls {
		key := session.IdempotencyKey("s1", fmt.Sprint("call_", i))
		out, err := ledger.Do(agentloop.ToolContext(ctx, key, store), func(ctx context.Context) (string, error) {
			res, err := refundService(filepath.Join(dir, effectsFn), key, keyed)
			if err == nil && mode == "effect" {
				die()
			}
			return res, err
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		fmt.Println(key, out)
	}
	return 0
}

// refundService makes a refund: a line "<key> refund #N" appended to the
// effects file, fsynced. keyed, it first looks for the key's refund and
// returns that one, as a service that dedupes by idempotency key does.
func refundService(path, key string, keyed bool) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(data) == 0 {
		lines = nil
	}
	if keyed {
		for _, l := range lines {
			if k, res, _ := strings.Cut(l, " "); k == key {
				return res, nil
			}
		}
	}
	res := fmt.Sprintf("refund #%d", len(lines)+1)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := f.WriteString(key + " " + res + "\n"); err != nil {
		return "", err
	}
	return res, f.Sync()
}

// child returns the command of a child process in mode on dir.
func child(t *testing.T, dir, mode string, keyed bool, extra ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	k := "0"
	if keyed {
		k = "1"
	}
	cmd.Env = append(os.Environ(), childEnv+"="+mode, dirEnv+"="+dir, keyedEnv+"="+k)
	cmd.Env = append(cmd.Env, extra...)
	cmd.Stderr = os.Stderr
	return cmd
}

// effects returns the refunds made, by key.
func effects(t *testing.T, dir string) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, effectsFn))
	require.NoError(t, err)
	out := map[string][]string{}
	for l := range strings.Lines(string(data)) {
		k, res, _ := strings.Cut(strings.TrimSuffix(l, "\n"), " ")
		out[k] = append(out[k], res)
	}
	return out
}

// A process killed around the ledger's write, then the call run again
// by the next process: after the record, the result comes back and the
// refund is not made again; between the refund and the record, the
// refund is made again unless the service dedupes by the key Do's work
// hands it (the window the package doc names).
func TestCrashAroundTheRecord(t *testing.T) {
	cases := []struct {
		kill     string
		keyed    bool
		refunds  []string // made, in order
		returned string   // what the call run again returns
	}{
		{"recorded", false, []string{"refund #1"}, "refund #1"},
		{"recorded", true, []string{"refund #1"}, "refund #1"},
		{"effect", true, []string{"refund #1"}, "refund #1"},
		{"effect", false, []string{"refund #1", "refund #2"}, "refund #2"},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/keyed=%v", c.kill, c.keyed), func(t *testing.T) {
			dir := t.TempDir()
			err := child(t, dir, c.kill, c.keyed).Run()
			var ee *exec.ExitError
			require.ErrorAs(t, err, &ee)
			assert.Equal(t, syscall.SIGKILL, ee.Sys().(syscall.WaitStatus).Signal(), "the child was killed")

			out, err := child(t, dir, "none", c.keyed).Output()
			require.NoError(t, err)
			assert.Equal(t, "s1/call_0 "+c.returned+"\n", string(out))
			assert.Equal(t, map[string][]string{"s1/call_0": c.refunds}, effects(t, dir))

			// And a third run changes nothing.
			out, err = child(t, dir, "none", c.keyed).Output()
			require.NoError(t, err)
			assert.Equal(t, "s1/call_0 "+c.returned+"\n", string(out))
			assert.Equal(t, map[string][]string{"s1/call_0": c.refunds}, effects(t, dir))
		})
	}
}

// Trials: a process running calls is killed at a random moment, then
// every call is run again to the end. With a service that dedupes by the
// key, every call's refund is made once and every run of a call returns
// it; without, at most the one call in flight at the kill is refunded
// twice, and its recorded result is the second.
func TestCrashAtARandomMoment(t *testing.T) {
	const trials, calls = 10, 40
	for trial := range trials {
		keyed := trial%2 == 0
		dir := t.TempDir()
		cmd := child(t, dir, "loop", keyed, callsEnv+"="+strconv.Itoa(calls))
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		r := bufio.NewReader(stdout)
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		require.Equal(t, "ready\n", line)
		time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
		require.NoError(t, cmd.Process.Kill())
		var before bytes.Buffer
		_, _ = before.ReadFrom(r)
		_ = cmd.Wait()

		out, err := child(t, dir, "loop", keyed, callsEnv+"="+strconv.Itoa(calls)).Output()
		require.NoError(t, err)
		made := effects(t, dir)
		twice := 0
		for l := range strings.Lines(strings.TrimPrefix(string(out), "ready\n")) {
			key, res, _ := strings.Cut(strings.TrimSuffix(l, "\n"), " ")
			refunds := made[key]
			require.NotEmpty(t, refunds, "trial %d: %s returned %q with no refund made", trial, key, res)
			assert.Equal(t, refunds[len(refunds)-1], res, "trial %d: %s returns its last refund", trial, key)
			if len(refunds) > 1 {
				twice++
				assert.False(t, keyed, "trial %d: %s refunded %v by a service that dedupes", trial, key, refunds)
			}
		}
		assert.LessOrEqual(t, twice, 1, "trial %d: at most the call in flight is refunded twice", trial)
		assert.Len(t, made, calls, "trial %d", trial)
		t.Logf("trial %d (keyed %v): killed after %d calls returned; refunded twice: %d", trial, keyed, strings.Count(before.String(), "\n"), twice)
	}
}
