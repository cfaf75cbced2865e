package main

import (
	"context"
	"io"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/agentsrv/mcpserve"
)

func newMCPCmd(e *env) *cobra.Command {
	var cfg, as string
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the composition's agents as MCP tools over stdio",
		Long: `Serve the composition's agents to an MCP client (an IDE, a desktop assistant,
another agent) over stdio, until the client closes stdin. Each agent is a tool:
its as_tool name, description and parameters, or its entry id and a task. A
call runs one turn in a new session, or in the session its "session" argument
names (the session of an earlier answer's receipt); the turn's text streams as
progress notifications, and cancelling the call ends the turn aborted.

Every answer carries a receipt in its _meta ("vigil/receipt"): the session,
the turn, the seq and request digest the answer stands at and, where the
sessions are signed, the turn's checkpoint, which 'vigil verify --key K
--anchor FILE ID' checks. A turn that waits for an approval asks the client
(input-required or elicitation); a client that can answer neither is told the
session and calls to decide with 'vigil approve'. Turns and decisions are
logged as made by --as.

'vigil serve' serves the same tools over streamable HTTP at /mcp, behind its
authentication.`,
		Example: `  vigil mcp -c plugins.yaml
  # a client's configuration (Claude Desktop, VS Code, Cursor):
  #   {"mcpServers": {"vigil": {"command": "vigil", "args": ["mcp", "-c", "/path/to/plugins.yaml"]}}}`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			return cmdMCP(cmd.Context(), e, cfg, as)
		}),
	}
	configFlag(cmd, &cfg)
	cmd.Flags().StringVar(&as, "as", "", "who the turns and decisions are logged as made by (default: this process's user)")
	return cmd
}

func cmdMCP(ctx context.Context, e *env, cfg, as string) (err error) {
	if as == "" {
		as = localUser()
	}
	h, err := openHost(e, cfg)
	if err != nil {
		return err
	}
	defer closeUnlessAbandoned(h, &err)
	srv, err := mcpserve.New(h.rt, mcpserve.Options{Access: mcpserve.Local{Name: as}, Version: versionString(), Logger: h.log.Named("mcp")})
	if err != nil {
		return err
	}
	// stdout is the protocol's: everything else goes to stderr.
	return srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(e.stdin), Writer: nopWriteCloser{e.stdout}})
}

// nopWriteCloser is a writer the transport may close without closing
// the process's stdout.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
