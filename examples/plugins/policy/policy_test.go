package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/external/sdk"
	"github.com/vigil-run/vigil/session"
)

func callEvent(t *testing.T, name, args string) *sdk.Event {
	t.Helper()
	r, err := session.NewRecord(5, time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), session.Event{
		Type: session.TypeToolCall, Turn: 1, Step: 1, Data: session.ToolCall{ID: "call_1", Name: name, Arguments: args},
	})
	require.NoError(t, err)
	return &sdk.Event{Session: "s", Seq: r.Seq(), Type: r.Type(), Line: r.Bytes()}
}

func TestPolicyVetoesMatchingCalls(t *testing.T) {
	var p policy
	require.NoError(t, p.configure(Config{Rules: []Rule{
		{Tool: "^shell$", Arguments: `rm\s+-rf`, Reason: "no recursive deletes"},
		{Arguments: "lightyear|\"ly\""},
	}}))
	cases := []struct {
		tool, args string
		veto       string // "" when allowed
	}{
		{"shell", `{"cmd":"ls"}`, ""},
		{"shell", `{"cmd":"rm -rf /"}`, "no recursive deletes"},
		{"myshell", `{"cmd":"rm -rf /"}`, ""},
		{"convert", `{"value":1,"from":"ly","to":"km"}`, "matches rules[1]"},
		{"convert", `{"value":1,"from":"km","to":"mi"}`, ""},
	}
	for _, tc := range cases {
		err := p.validate(context.Background(), callEvent(t, tc.tool, tc.args))
		if tc.veto == "" {
			assert.NoError(t, err, "%s %s", tc.tool, tc.args)
			continue
		}
		var v *sdk.VetoError
		require.ErrorAs(t, err, &v, "%s %s", tc.tool, tc.args)
		assert.Equal(t, CodePolicy, v.Code)
		assert.Contains(t, v.Reason, tc.veto)
	}
}

func TestPolicyRefusesBadPatterns(t *testing.T) {
	var p policy
	err := p.configure(Config{Rules: []Rule{{Tool: "("}}})
	require.ErrorContains(t, err, "rules[0].tool")
}
