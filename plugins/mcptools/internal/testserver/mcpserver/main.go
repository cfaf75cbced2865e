// Command mcpserver runs the test MCP server over stdio. When
// MCPSERVER_DIR is set it writes its process id to MCPSERVER_DIR/pid at
// start, and creates MCPSERVER_DIR/hang when a hang call starts.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-run/vigil/plugins/mcptools/internal/testserver"
)

func main() {
	dir := os.Getenv("MCPSERVER_DIR")
	var opts testserver.Options
	if dir != "" {
		if err := os.WriteFile(filepath.Join(dir, "pid"), []byte(strconv.Itoa(os.Getpid())), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		opts.Hanging = func() { _ = os.WriteFile(filepath.Join(dir, "hang"), nil, 0o644) }
	}
	fmt.Fprintln(os.Stderr, "mcpserver: ready")
	if err := testserver.New(opts).Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, "mcpserver:", err)
		os.Exit(1)
	}
}
