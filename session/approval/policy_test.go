package approval_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/approval"
)

func TestPolicyFirstMatchingRuleWins(t *testing.T) {
	m, err := approval.Compile(session.ApprovalPolicy{Default: session.ActionAllow, Rules: []session.ApprovalRule{
		{Tool: "shell", Arguments: `rm\s+-rf`, Action: session.ActionDeny, Reason: "no recursive deletes"},
		{Tool: "shell", Action: session.ActionAsk},
		{Tool: "read_*", Action: session.ActionAsk, Reason: "reads"},
	}})
	require.NoError(t, err)
	cases := []struct{ tool, args, action, reason string }{
		{"shell", `{"cmd":"rm -rf /"}`, session.ActionDeny, "no recursive deletes"},
		{"shell", `{"cmd":"ls"}`, session.ActionAsk, ""},
		{"read_file", `{}`, session.ActionAsk, "reads"},
		{"calc", `{}`, session.ActionAllow, ""},
	}
	for _, tc := range cases {
		action, reason := m.Match(tc.tool, tc.args)
		assert.Equal(t, tc.action, action, tc.tool+" "+tc.args)
		assert.Equal(t, tc.reason, reason, tc.tool+" "+tc.args)
	}
}
