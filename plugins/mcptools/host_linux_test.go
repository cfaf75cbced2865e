package mcptools_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestServerDiesWithHost kills a host outright (SIGKILL: no disposal
// runs) and requires its MCP server process to die with it.
func TestServerDiesWithHost(t *testing.T) {
	dir := t.TempDir()
	host := exec.Command(os.Args[0], "-test.run=^$")
	host.Env = append(os.Environ(), hostHelperEnv+"="+dir, "VIGIL_MCP_SERVER_BIN="+serverBin)
	host.Stderr = os.Stderr
	require.NoError(t, host.Start())
	t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })

	pid := readPid(t, dir)
	require.True(t, alive(pid))
	require.NoError(t, host.Process.Kill())
	_ = host.Wait()
	require.Eventually(t, func() bool { return !alive(pid) }, 10*time.Second, 10*time.Millisecond,
		"the MCP server outlived its host")
}
