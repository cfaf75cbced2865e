package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/agentsrv/mcpserve"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/server"
	"github.com/vigil-run/vigil/session"
)

// bearer sets a bearer token on every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// mcpClient connects an MCP client with token to a's /mcp, answering
// elicitations with answer when it is set.
func mcpClient(t *testing.T, a *api, token string, answer *mcp.ElicitResult) (*mcp.ClientSession, error) {
	t.Helper()
	opts := &mcp.ClientOptions{}
	if answer != nil {
		opts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return answer, nil }
	}
	tr := &mcp.StreamableClientTransport{Endpoint: a.srv.URL + "/mcp", HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(), tr, nil)
	if err == nil {
		t.Cleanup(func() { _ = cs.Close() })
	}
	return cs, err
}

func receiptOf(t *testing.T, res *mcp.CallToolResult) agentsrv.Receipt {
	t.Helper()
	raw, err := json.Marshal(res.Meta[agentsrv.MetaKey])
	require.NoError(t, err)
	var r agentsrv.Receipt
	require.NoError(t, json.Unmarshal(raw, &r))
	return r
}

// /mcp is behind the API's gate: a token is needed, the session a call
// makes is the caller's tenant's and logged as the caller's, another
// tenant's session is one that does not exist, only an approver is asked
// its approvals, and a user is told what waits.
func TestMCPEndpointIsBehindTheGate(t *testing.T) {
	toks, err := server.NewTokens("", "ann acme user,approver ann-token-0123456789; bob acme user bob-token-0123456789; eve other user eve-token-0123456789")
	require.NoError(t, err)
	a := newAPI(t, composition(true, calc, scripted.Reply{Text: "42."}), server.Options{Auth: toks})
	ctx := context.Background()

	_, err = mcpClient(t, a, "wrong", nil)
	require.Error(t, err, "no session without a valid token")

	ann, err := mcpClient(t, a, "ann-token-0123456789", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}})
	require.NoError(t, err)
	res, err := ann.CallTool(ctx, &mcp.CallToolParams{Name: "agent", Arguments: map[string]any{"task": "6*7?"}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	assert.Equal(t, "42.", res.Content[0].(*mcp.TextContent).Text)
	r := receiptOf(t, res)
	info, err := a.rt.SessionInfo(ctx, r.Session)
	require.NoError(t, err)
	assert.Equal(t, "acme", info.Tenant)
	assert.Equal(t, "ann", info.By)

	eve, err := mcpClient(t, a, "eve-token-0123456789", nil)
	require.NoError(t, err)
	res, err = eve.CallTool(ctx, &mcp.CallToolParams{Name: "agent", Arguments: map[string]any{"task": "hi", "session": r.Session}})
	require.NoError(t, err)
	assert.True(t, res.IsError)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "no session "+r.Session)

	bob, err := mcpClient(t, a, "bob-token-0123456789", &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}})
	require.NoError(t, err)
	res, err = bob.CallTool(ctx, &mcp.CallToolParams{Name: "agent", Arguments: map[string]any{"task": "6*7?", "session": r.Session}})
	require.NoError(t, err)
	require.False(t, res.IsError)
	require.Contains(t, res.Meta, mcpserve.WaitingKey, "a user without the approver role is told what waits, not asked")
	p, err := a.rt.Pending(ctx, r.Session)
	require.NoError(t, err)
	require.NotNil(t, p)
	log, err := a.rt.Session(ctx, r.Session)
	require.NoError(t, err)
	var by []string
	for _, rec := range log.Records {
		if rec.Type() == session.TypeTurnStart {
			ts, err := session.DecodeData[session.TurnStart](rec)
			require.NoError(t, err)
			by = append(by, ts.By)
		}
	}
	assert.Equal(t, []string{"ann", "bob"}, by)
}
