//go:build unix

package external_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// TestAPluginThatAsksSuspendsTheTurnUntilADecision: the test plugin's
// Validate answers ask (sdk.Ask) for echo. The turn suspends with an
// approval/request by the plugin, before the tool runs; the plugin saw
// the call once, proposed; a decision resumes the turn, which runs the
// tool or answers it APPROVAL_DENIED.
func TestAPluginThatAsksSuspendsTheTurnUntilADecision(t *testing.T) {
	cases := []struct {
		name  string
		allow bool
		check func(t *testing.T, res session.ToolResult)
	}{
		{"allowed", true, func(t *testing.T, res session.ToolResult) {
			assert.Nil(t, res.Error)
			assert.JSONEq(t, `{"x":1}`, res.Content)
		}},
		{"denied", false, func(t *testing.T, res session.ToolResult) {
			require.NotNil(t, res.Error)
			assert.Equal(t, session.CodeApprovalDenied, res.Error.Code)
			assert.Equal(t, "alice denied this call: not now", res.Error.Message)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			h := newHost(t)
			h.mustLoad(&external.Config{Path: bins["testplugin"], Config: map[string]any{"ask_tools": "^echo$"}})
			prov := scriptedProvider(t,
				scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "echo", Arguments: map[string]any{"x": 1}}}},
				scripted.Reply{Text: "done"},
			)
			a := agentloop.New(h.c, agentloop.Config{}, agentloop.WithProvider(prov))
			sess := h.session()

			res, err := a.Run(ctx, sess, "echo it")
			require.ErrorIs(t, err, agentloop.ErrSuspended)
			require.NotNil(t, res)
			assert.Equal(t, agentloop.ReasonSuspended, res.Reason)
			require.Len(t, res.Pending, 1)
			call := res.Pending[0].Call
			assert.Equal(t, "echo", call.Name)
			assert.Equal(t, session.ApprovalRequest{ID: call.ID, By: "testplugin", Reason: "the tool echo needs a person"}, res.Pending[0].Request)
			reqs := ofType(sess.Records(), session.TypeApprovalRequest)
			require.Len(t, reqs, 1)
			assert.Empty(t, ofType(sess.Records(), session.TypeToolStart), "nothing ran before a decision")
			assert.Equal(t, 1, prov.Calls())

			d, err := agentloop.Decide(ctx, sess, call.ID, agentloop.Decision{Allow: tc.allow, By: "alice", Reason: "not now"})
			require.NoError(t, err)
			assert.Equal(t, session.TypeApprovalDecision, d.Type())
			res, err = a.Resume(ctx, sess)
			require.NoError(t, err)
			assert.Equal(t, session.ReasonCompleted, res.Reason)
			assert.Equal(t, 2, prov.Calls())
			results := ofType(sess.Records(), session.TypeToolResult)
			require.Len(t, results, 1)
			r, err := session.DecodeData[session.ToolResult](results[0])
			require.NoError(t, err)
			tc.check(t, r)
			verify(t, sess)

			// Asked once about the call, before it was logged; its
			// commit was not sent again.
			var calls []string
			for _, line := range strings.Split(h.call("validated", "{}"), "\n") {
				if strings.Contains(line, session.TypeToolCall) {
					calls = append(calls, line)
				}
			}
			assert.Equal(t, []string{"0 tool/call proposed=true"}, calls)
		})
	}
}

// TestAPluginsAskRefusesWhatCannotWait: an ask for anything but a
// proposed tool call is a refusal that says so, and nothing is logged.
func TestAPluginsAskRefusesWhatCannotWait(t *testing.T) {
	h := newHost(t)
	h.mustLoad(&external.Config{Path: bins["testplugin"], Config: map[string]any{"ask_messages": "^wait"}})
	a := agentloop.New(h.c, agentloop.Config{}, agentloop.WithProvider(scriptedProvider(t, scripted.Reply{Text: "never"})))
	sess := h.session()

	_, err := a.Run(context.Background(), sess, "wait for me")
	var veto *external.VetoError
	require.ErrorAs(t, err, &veto)
	assert.Equal(t, &external.VetoError{Plugin: "testplugin", Code: "ASK", Reason: "the message needs a person", Ask: true, Type: session.TypeUserMessage}, veto)
	assert.Contains(t, err.Error(), "plugin testplugin asked for a decision on a user/message event, which cannot wait for one")
	assert.Empty(t, ofType(sess.Records(), session.TypeUserMessage))
}

// TestACancelledProposalIsValidatedAtTheCommit: a proposal that gets no
// answer because the turn is being cancelled is not held against the
// call: its commit (which the loop makes to answer it) is validated
// afresh, and the turn ends aborted, not blocked.
func TestACancelledProposalIsValidatedAtTheCommit(t *testing.T) {
	h := newHost(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Registered before the external plugin, so its veto runs first.
	_, err := h.c.Plugin(bus.PluginFunc("canceller", func(c *bus.Context, _ struct{}) error {
		bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
			if d.Name == agentloop.ToolApprove.Name() {
				cancel()
			}
			return nil
		})
		return nil
	}), struct{}{})
	require.NoError(t, err)
	h.mustLoad(testPlugin())
	prov := scriptedProvider(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "echo"}}})
	a := agentloop.New(h.c, agentloop.Config{}, agentloop.WithProvider(prov))
	sess := h.session()

	res, _ := a.Run(ctx, sess, "go")
	require.NotNil(t, res)
	assert.Equal(t, session.ReasonAborted, res.Reason)
	results := ofType(sess.Records(), session.TypeToolResult)
	require.Len(t, results, 1)
	r, err := session.DecodeData[session.ToolResult](results[0])
	require.NoError(t, err)
	require.NotNil(t, r.Error)
	assert.Equal(t, session.CodeToolNotStarted, r.Error.Code)
	verify(t, sess)
}
