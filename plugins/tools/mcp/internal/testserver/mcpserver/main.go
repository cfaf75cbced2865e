// Command mcpserver runs the test MCP server over stdio.
//
// When MCPSERVER_DIR is set it writes its process id to MCPSERVER_DIR/pid
// at start, and creates MCPSERVER_DIR/hang when a hang call starts. With
// MCPSERVER_STUBBORN=1 it plays a server that will not go: it ignores
// SIGTERM, stays after its stdin closed, and starts a child in its
// process group whose id it writes to MCPSERVER_DIR/child.
package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-run/vigil/plugins/tools/mcp/internal/testserver"
)

func main() {
	dir := os.Getenv("MCPSERVER_DIR")
	stubborn := os.Getenv("MCPSERVER_STUBBORN") == "1"
	var opts testserver.Options
	if dir != "" {
		opts.Hanging = func() { _ = os.WriteFile(filepath.Join(dir, "hang"), nil, 0o644) }
	}
	if stubborn {
		signal.Ignore(syscall.SIGTERM)
		child := exec.Command("sleep", "300")
		if err := child.Start(); err != nil {
			fail(err)
		}
		write(dir, "child", child.Process.Pid)
	}
	// The pid goes last: a test that read it finds the rest in place.
	write(dir, "pid", os.Getpid())
	fmt.Fprintln(os.Stderr, "mcpserver: ready")
	err := testserver.New(opts).Run(context.Background(), &mcp.StdioTransport{})
	if stubborn {
		select {}
	}
	if err != nil {
		fail(err)
	}
}

func write(dir, name string, pid int) {
	if dir == "" {
		return
	}
	// Written whole under a temporary name, so a reader never sees half.
	tmp := filepath.Join(dir, name+".tmp")
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(pid)), 0o644); err != nil {
		fail(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "mcpserver:", err)
	os.Exit(1)
}
