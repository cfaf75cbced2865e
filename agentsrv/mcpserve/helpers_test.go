package mcpserve_test

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/agentsrv/mcpserve"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	_ "github.com/vigil-run/vigil/plugins/store/memory" // store/memory, by name
	_ "github.com/vigil-run/vigil/plugins/tools/calc"   // tools/calc, by name
	"github.com/vigil-run/vigil/session"
)

// blocker is a tool that runs until its context is done, announcing on
// started that it runs: a turn to cancel.
type blocker struct{ started chan struct{} }

func (b *blocker) Spec() session.ToolSpec {
	return session.ToolSpec{Name: "wait", Description: "waits", Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (b *blocker) Execute(ctx context.Context, _ json.RawMessage) (string, error) {
	select {
	case b.started <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return "", ctx.Err()
}

var theBlocker = &blocker{started: make(chan struct{}, 1)}

func init() {
	bus.RegisterFunc("test/wait", "a tool that waits for its context", func(c *bus.Context, _ struct{}) error {
		_, err := agentloop.ProvideTool(c, theBlocker)
		return err
	})
}

// askCalc is a reply that calls calc, which the policy asks about.
var askCalc = scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "calc", Arguments: map[string]any{"expression": "6*7"}}}}

// waitCall is a reply that calls the blocking tool.
var waitCall = scripted.Reply{Text: "Waiting.", ToolCalls: []scripted.ToolCall{{Name: "wait", Arguments: map[string]any{}}}}

// composition is an agent on the in-memory store with the model script
// given, calc and wait as its tools, and a policy that asks before calc;
// extra entries follow (another agent).
func composition(script []scripted.Reply, extra ...config.Entry) vigil.Source {
	return compositionOn(vigil.Plugin("store/memory", nil), script, extra...)
}

// compositionOn is composition on the store entry given.
func compositionOn(store config.Entry, script []scripted.Reply, extra ...config.Entry) vigil.Source {
	entries := []config.Entry{
		store,
		vigil.Plugin("provider/scripted", scripted.Config{Script: script, Repeat: true}),
		vigil.Plugin("tools/calc", nil),
		vigil.Plugin("test/wait", nil),
		vigil.Plugin("approvals", approvals.Config{Rules: []approvals.Rule{{Tool: "calc", Action: "ask", Reason: "arithmetic needs a yes"}}}),
		vigil.Plugin("agent", agentloop.Config{System: "Be brief."}),
		vigil.Plugin("invariants", invariants.Config{Mode: "strict"}),
	}
	return vigil.Compose(append(entries, extra...)...)
}

func openRuntime(t *testing.T, src vigil.Source) *vigil.Runtime {
	t.Helper()
	rt, err := vigil.Open(context.Background(), src)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	return rt
}

// client is a Go SDK client connected in memory to an MCP server over rt,
// speaking protocol version (the latest when ""), that answers
// elicitations with answer when it is set.
type client struct {
	*mcp.ClientSession
	mu       sync.Mutex
	progress []string
	// sessions are the sessions the progress notifications named.
	sessions []any
}

func connect(t *testing.T, rt *vigil.Runtime, version string, answer func(*mcp.ElicitRequest) *mcp.ElicitResult) *client {
	t.Helper()
	srv, err := mcpserve.New(rt, mcpserve.Options{Access: mcpserve.Local{Name: "tester"}})
	require.NoError(t, err)
	st, ct := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); _ = srv.Run(ctx, st) }()
	t.Cleanup(func() { cancel(); <-served })
	c := &client{}
	opts := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		c.mu.Lock()
		c.progress = append(c.progress, req.Params.Message)
		c.sessions = append(c.sessions, req.Params.Meta[mcpserve.SessionKey])
		c.mu.Unlock()
	}}
	if answer != nil {
		opts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return answer(req), nil }
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	require.NoError(t, err)
	t.Cleanup(func() { _ = cs.Close() })
	c.ClientSession = cs
	return c
}

// call calls tool with args, asking for progress.
func (c *client) call(t *testing.T, ctx context.Context, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: tool, Arguments: args}
	p.SetProgressToken("p1")
	res, err := c.CallTool(ctx, p)
	require.NoError(t, err)
	return res
}

// receipt reads the receipt of a result.
func receipt(t *testing.T, res *mcp.CallToolResult) agentsrv.Receipt {
	t.Helper()
	raw, err := json.Marshal(res.Meta[agentsrv.MetaKey])
	require.NoError(t, err)
	var r agentsrv.Receipt
	require.NoError(t, json.Unmarshal(raw, &r), "%s", raw)
	return r
}

// text is a result's text.
func text(res *mcp.CallToolResult) string {
	var out string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out += tc.Text
		}
	}
	return out
}

// decidedBy names who logged each approval/decision of records.
func decidedBy(t *testing.T, records []session.Record) []string {
	t.Helper()
	var by []string
	for _, rec := range records {
		if rec.Type() == session.TypeApprovalDecision {
			d, err := session.DecodeData[session.ApprovalDecision](rec)
			require.NoError(t, err)
			by = append(by, d.By)
		}
	}
	return by
}
