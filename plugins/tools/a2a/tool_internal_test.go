package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	sdk "github.com/a2aproject/a2a-go/a2a"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
)

func TestConfigIsValidated(t *testing.T) {
	for _, c := range []Config{{}, {Agents: []Agent{{}}}, {Agents: []Agent{{Card: "http://x"}}, Timeout: -1}} {
		require.ErrorIs(t, c.Validate(), ErrConfig)
	}
	require.NoError(t, Config{Agents: []Agent{{Card: "http://x"}}}.Validate())
}

// A card URL ending in .json is the card; any other is the agent's base,
// under which the card is at the well-known path.
func TestCardLocation(t *testing.T) {
	base, path := cardLocation("https://h.example/a2a/r/.well-known/agent-card.json")
	assert.Equal(t, "https://h.example", base)
	assert.Equal(t, "/a2a/r/.well-known/agent-card.json", path)
	base, path = cardLocation("https://h.example/a2a/r")
	assert.Equal(t, "https://h.example/a2a/r", base)
	assert.Empty(t, path)
}

func TestToolNameOfACard(t *testing.T) {
	assert.Equal(t, "a2a_Research_Bot", toolName("Research Bot!"))
	assert.Equal(t, "a2a_agent", toolName("…"))
	assert.NoError(t, agentloop.CheckToolName(toolName("a very long name that goes on and on and on and on and on and on and on")))
}

// A card that cannot be read fails the plugin's load; arguments that are
// no task, and an agent that refuses the call, are tool errors.
func TestFailuresAreSaid(t *testing.T) {
	ctx := context.Background()
	_, err := New(ctx, Agent{Card: "http://127.0.0.1:1/none"}, 0)
	require.Error(t, err)

	card := sdk.AgentCard{Name: "flaky", URL: "", PreferredTransport: sdk.TransportProtocolJSONRPC, ProtocolVersion: "0.3.0"}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_ = json.NewEncoder(w).Encode(card)
			return
		}
		http.Error(w, "no", http.StatusInternalServerError)
	}))
	defer srv.Close()
	card.URL = srv.URL + "/rpc"
	tool, err := New(ctx, Agent{Card: srv.URL}, 0)
	require.NoError(t, err)
	assert.Equal(t, "a2a_flaky", tool.Spec().Name)
	var te *agentloop.ToolError
	_, err = tool.Execute(ctx, json.RawMessage(`{"text":"x"}`))
	require.ErrorAs(t, err, &te)
	assert.Equal(t, CodeBadArguments, te.Code)
	_, err = tool.Execute(ctx, json.RawMessage(`{"task":"x"}`))
	require.ErrorAs(t, err, &te)
	assert.Equal(t, CodeUnreachable, te.Code)
}
