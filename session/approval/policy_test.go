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

// TestCompileRefusesWhatALogMayNotCarry: Compile refuses exactly the
// policies session.CheckPolicy refuses when a log is loaded.
func TestCompileRefusesWhatALogMayNotCarry(t *testing.T) {
	cases := []struct {
		name string
		p    session.ApprovalPolicy
	}{
		{"bad default", session.ApprovalPolicy{Default: "maybe"}},
		{"bad action", session.ApprovalPolicy{Default: session.ActionAllow, Rules: []session.ApprovalRule{{Tool: "*", Action: "perhaps"}}}},
		{"no tool", session.ApprovalPolicy{Default: session.ActionAllow, Rules: []session.ApprovalRule{{Action: session.ActionDeny}}}},
		{"bad glob", session.ApprovalPolicy{Default: session.ActionAllow, Rules: []session.ApprovalRule{{Tool: "[", Action: session.ActionDeny}}}},
		{"bad regexp", session.ApprovalPolicy{Default: session.ActionAllow, Rules: []session.ApprovalRule{{Tool: "*", Arguments: "(", Action: session.ActionDeny}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := approval.Compile(tc.p)
			require.ErrorIs(t, err, session.ErrInvalidPolicy)
			assert.ErrorIs(t, err, session.ErrInvalidPayload)
			assert.Equal(t, session.CheckPolicy(tc.p), err)
		})
	}
}
