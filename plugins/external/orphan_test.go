//go:build unix

package external_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/external"
)

// helperHostEnv makes the test binary a host process: it loads the plugin
// named by the variable's value, prints the plugin's pid and waits to be
// killed.
const helperHostEnv = "VIGIL_TEST_HELPER_HOST"

func runHelperHost() int {
	root := bus.New()
	c := root.Context()
	if _, err := c.Plugin(external.New(), &external.Config{Path: os.Getenv(helperHostEnv)}); err != nil {
		fmt.Fprintln(os.Stderr, "helper host:", err)
		return 1
	}
	tl, err := bus.NewService[agentloop.Tool](agentloop.ToolServicePrefix + "pid").Get(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper host:", err)
		return 1
	}
	pid, err := tl.Execute(context.Background(), []byte("{}"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper host:", err)
		return 1
	}
	fmt.Printf("pid %s\n", pid)
	// Killed by the test long before this.
	time.Sleep(time.Minute)
	return 0
}

func TestPluginExitsWhenItsHostIsKilled(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperHostEnv+"="+bins["testplugin"])
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pid ")))
	require.NoError(t, err, "helper host said %q", line)
	require.True(t, alive(pid), "the plugin is running while its host is")
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })

	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	require.True(t, waitGone(pid, 5*time.Second), "plugin process %d outlived its host", pid)
}
