//go:build unix

package mcp_test

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/tools/mcp"
)

// hostHelperEnv, set to a directory, makes the test binary a host that
// mounts a stubborn test server (its pid files go to the directory) and
// waits to be killed.
const hostHelperEnv = "VIGIL_MCP_HOST_HELPER"

func hostHelper() int {
	root := bus.New()
	_, err := root.Context().Plugin(mcp.Plugin, &mcp.Config{
		Command: os.Getenv("VIGIL_MCP_SERVER_BIN"),
		Env:     map[string]string{"MCPSERVER_DIR": os.Getenv(hostHelperEnv), "MCPSERVER_STUBBORN": "1"},
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "host helper:", err)
		return 1
	}
	select {}
}

// alive reports whether process pid exists and is not a zombie.
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return !os.IsNotExist(err)
	}
	// pid (comm) state …: comm may hold spaces; the state follows the
	// last parenthesis.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}
