package agentsrv

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

func testAgents(t testing.TB) (task, custom, taken Agent) {
	var err error
	task, err = agentOf("helper", agentloop.Config{})
	require.NoError(t, err)
	custom, err = agentOf("sum", agentloop.Config{Delegation: agentloop.Delegation{AsTool: &agentloop.AsTool{Name: "summarize",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}}})
	require.NoError(t, err)
	taken, err = agentOf("own", agentloop.Config{Delegation: agentloop.Delegation{AsTool: &agentloop.AsTool{Name: "own",
		Parameters: map[string]any{"type": "object", "properties": map[string]any{"session": map[string]any{"type": "integer"}}}}}})
	require.NoError(t, err)
	return task, custom, taken
}

// A call's arguments make the turn: the task (default parameters) or the
// arguments' JSON without the session argument (custom ones); the
// session argument names the session to continue, unless the agent's
// own parameters have a property of that name.
func TestCallReadsTheArguments(t *testing.T) {
	task, custom, taken := testAgents(t)
	for _, tc := range []struct {
		name  string
		agent Agent
		args  string
		want  Call
		bad   bool
	}{
		{"task", task, `{"task":"do it"}`, Call{Prompt: "do it"}, false},
		{"task and session", task, `{"task":"go on","session":"01ABC"}`, Call{Session: "01ABC", Prompt: "go on"}, false},
		{"no task", task, `{}`, Call{}, true},
		{"no arguments", task, ``, Call{}, true},
		{"empty task", task, `{"task":""}`, Call{}, true},
		{"not an object", task, `["task"]`, Call{}, true},
		{"session not a string", task, `{"task":"x","session":7}`, Call{}, true},
		{"session not an id", task, `{"task":"x","session":"../etc"}`, Call{}, true},
		{"custom", custom, `{"text":"abc","session":"s1"}`, Call{Session: "s1", Prompt: `{"text":"abc"}`}, false},
		{"custom keys sorted", custom, `{"z":1,"text":"abc"}`, Call{Prompt: `{"text":"abc","z":1}`}, false},
		{"the agent's own session", taken, `{"session":7}`, Call{Prompt: `{"session":7}`}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.agent.Call(json.RawMessage(tc.args))
			if tc.bad {
				require.ErrorIs(t, err, ErrBadArguments)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// The input schema is the agent's parameters with the session argument
// added, unless they have it.
func TestInputSchemaAddsTheSession(t *testing.T) {
	task, custom, taken := testAgents(t)
	for _, a := range []Agent{task, custom} {
		schema, err := a.InputSchema()
		require.NoError(t, err)
		props, err := properties(schema)
		require.NoError(t, err)
		assert.JSONEq(t, string(sessionProperty), string(props[SessionArg]))
		orig, err := properties(a.Tool.Parameters)
		require.NoError(t, err)
		for k, v := range orig {
			assert.JSONEq(t, string(v), string(props[k]))
		}
	}
	schema, err := taken.InputSchema()
	require.NoError(t, err)
	assert.JSONEq(t, string(taken.Tool.Parameters), string(schema))
	assert.Equal(t, session.TaskParameters, task.Tool.Parameters)
}

// Reading any arguments never panics; what it accepts names a valid
// session, and a prompt the default parameters' task or JSON.
func FuzzCall(f *testing.F) {
	for _, s := range []string{`{"task":"x"}`, `{"task":"x","session":"abc"}`, `{"text":1}`, `null`, `[]`, `{"session":{}}`} {
		f.Add(s)
	}
	task, custom, _ := testAgents(f)
	f.Fuzz(func(t *testing.T, args string) {
		for _, a := range []Agent{task, custom} {
			c, err := a.Call(json.RawMessage(args))
			if err != nil {
				continue
			}
			if c.Session != "" {
				assert.True(t, session.ValidID(c.Session))
			}
			if a.Entry == "sum" {
				assert.True(t, json.Valid([]byte(c.Prompt)), "%q", c.Prompt)
			}
		}
	})
}

// An agent whose entry id is no tool name cannot be offered.
func TestAnEntryIDThatIsNoToolNameIsRefused(t *testing.T) {
	_, err := agentOf("my.agent", agentloop.Config{})
	require.ErrorIs(t, err, agentloop.ErrToolName)
}
