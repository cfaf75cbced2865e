package mcp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// serverBin is the test MCP server (internal/testserver/mcpserver), built
// once for the package.
var serverBin string

// TestMain builds the test server, runs the tests, and fails the package
// if a test leaves a goroutine behind (an unclosed session, a refresher
// that outlived its fiber). Run as a host helper (see
// TestServerDiesWithHost) it plays the host instead.
func TestMain(m *testing.M) {
	if os.Getenv(hostHelperEnv) != "" {
		os.Exit(hostHelper())
	}
	dir, err := os.MkdirTemp("", "mcp-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	serverBin = filepath.Join(dir, "mcpserver")
	build := exec.Command("go", "build", "-o", serverBin, "./internal/testserver/mcpserver")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the test server:", err)
		os.Exit(1)
	}
	code := m.Run()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
