package mcp_test

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServerDiesWithHost kills a host outright (SIGKILL: no disposer
// runs) and requires its MCP server to die with it, even a server that
// ignores its closed stdin and SIGTERM: the kernel sends it the parent
// death signal. What the server itself started is out of reach then (it
// is not the host's child); a disposal kills it with the process group.
func TestServerDiesWithHost(t *testing.T) {
	dir := t.TempDir()
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostHelperEnv+"="+dir, "VIGIL_MCP_SERVER_BIN="+serverBin)
	host.Stderr = os.Stderr
	require.NoError(t, host.Start())
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })

	pid := readPid(t, dir, "pid")
	child := readPid(t, dir, "child")
	t.Cleanup(func() { _ = syscall.Kill(child, syscall.SIGKILL) })
	require.True(t, alive(pid))
	require.NoError(t, host.Process.Kill())
	_ = host.Wait()
	require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 10*time.Millisecond,
		"the MCP server outlived its host")
}
