package approvals_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/approvals"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// proc is one "process": a bus with the invariants plugin (strict), a
// manager over store provided as the sessions service, and the approvals
// plugin with cfg.
type proc struct {
	t     *testing.T
	c     *bus.Context
	mgr   *live.Manager
	fiber *bus.Fiber
	ran   *atomic.Int64
}

func newProc(t *testing.T, store session.Store, cfg *approvals.Config) *proc {
	t.Helper()
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	c := root.Context()
	_, err := c.Plugin(invariants.New(), &invariants.Config{Mode: invariants.ModeStrict})
	require.NoError(t, err)
	var n atomic.Int64
	clock := func() time.Time {
		return time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(n.Add(1)) * time.Millisecond)
	}
	mgr := live.NewManager(c, store, live.WithClock(clock))
	_, err = live.Sessions.Provide(c, mgr)
	require.NoError(t, err)
	f, err := c.Plugin(approvals.Plugin, cfg)
	require.NoError(t, err)
	return &proc{t: t, c: c, mgr: mgr, fiber: f, ran: new(atomic.Int64)}
}

type tool struct {
	name string
	ran  *atomic.Int64
}

func (tl tool) Spec() session.ToolSpec {
	return session.ToolSpec{Name: tl.name, Parameters: json.RawMessage(`{"type":"object"}`)}
}

func (tl tool) Execute(_ context.Context, args json.RawMessage) (string, error) {
	tl.ran.Add(1)
	return tl.name + " ran with " + string(args), nil
}

func (p *proc) agent(replies ...scripted.Reply) *agentloop.Agent {
	p.t.Helper()
	prov, err := scripted.New(scripted.Config{Script: replies})
	require.NoError(p.t, err)
	return agentloop.New(p.c, agentloop.Config{}, agentloop.WithProvider(prov),
		agentloop.WithTools(tool{"read_file", p.ran}, tool{"shell", p.ran}, tool{"list_dir", p.ran}))
}

var policy = &approvals.Config{Default: "allow", Rules: []approvals.Rule{
	{Tool: "read_*", Action: "ask", Reason: "reads need a yes"},
	{Tool: "shell", Arguments: `rm\s+-rf`, Action: "deny", Reason: "no recursive deletes"},
}}

func ofType(recs []session.Record, typ string) []session.Record {
	var out []session.Record
	for _, r := range recs {
		if r.Type() == typ {
			out = append(out, r)
		}
	}
	return out
}

func verify(t *testing.T, path string) {
	t.Helper()
	rep, err := invariants.VerifyFile(path)
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
}

// TestRulesAllowDenyAndAskAcrossProcesses: the first matching rule
// decides; a denied call is answered POLICY_DENIED and the turn goes on
// to suspend on the asked one; a fresh process decides and resumes; the
// logs verify at each stage, the policy in them included.
func TestRulesAllowDenyAndAskAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store, err := jsonl.Open(dir)
	require.NoError(t, err)
	p := newProc(t, store, policy)
	sess, err := p.mgr.Create(ctx)
	require.NoError(t, err)
	a := p.agent(scripted.Reply{ToolCalls: []scripted.ToolCall{
		{Name: "shell", Arguments: map[string]any{"cmd": "rm -rf /"}},
		{Name: "shell", Arguments: map[string]any{"cmd": "ls"}},
		{Name: "read_file", Arguments: map[string]any{"path": "a"}},
	}})
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	require.Len(t, res.Pending, 1)
	assert.Equal(t, "read_file", res.Pending[0].Call.Name)
	assert.Equal(t, session.ApprovalRequest{ID: res.Pending[0].Call.ID, By: "approvals", Reason: "reads need a yes"}, res.Pending[0].Request)
	assert.Equal(t, int64(1), p.ran.Load(), "only the allowed shell call ran")

	recs := sess.Records()
	pol := ofType(recs, session.TypeApprovalPolicy)
	require.Len(t, pol, 1)
	assert.Equal(t, 0, pol[0].Turn())
	assert.Less(t, pol[0].Seq(), ofType(recs, session.TypeTurnStart)[0].Seq())
	denied, err := session.DecodeData[session.ToolResult](ofType(recs, session.TypeToolResult)[0])
	require.NoError(t, err)
	require.NotNil(t, denied.Error)
	assert.Equal(t, session.CodePolicyDenied, denied.Error.Code)
	assert.Contains(t, denied.Error.Message, "no recursive deletes")
	id := res.Pending[0].Call.ID
	require.NoError(t, sess.Close(ctx))
	require.NoError(t, store.Close())
	verify(t, store.Path(sess.ID()))

	store2, err := jsonl.Open(dir)
	require.NoError(t, err)
	defer store2.Close()
	p2 := newProc(t, store2, policy)
	s2, err := p2.mgr.Open(ctx, sess.ID())
	require.NoError(t, err)
	require.Len(t, s2.Records(), len(recs))
	_, err = agentloop.Decide(ctx, s2, id, agentloop.Decision{Allow: true, By: "ann"})
	require.NoError(t, err)
	res, err = p2.agent(scripted.Reply{Text: "done"}).Resume(ctx, s2)
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, int64(1), p2.ran.Load())
	// A second turn under the same policy logs no second policy.
	_, err = p2.agent(scripted.Reply{Text: "hi"}).Run(ctx, s2, "again")
	require.NoError(t, err)
	assert.Len(t, ofType(s2.Records(), session.TypeApprovalPolicy), 1)
	require.NoError(t, s2.Flush(ctx))
	verify(t, store2.Path(sess.ID()))
}

// TestAChangedPolicyIsLoggedInTheLiveSessions: mounting and changing the
// config log the policy in force in the live sessions between turns.
func TestAChangedPolicyIsLoggedInTheLiveSessions(t *testing.T) {
	ctx := context.Background()
	store := memoryStore(t)
	p := newProc(t, store, &approvals.Config{})
	sess, err := p.mgr.Create(ctx)
	require.NoError(t, err)
	assert.Empty(t, ofType(sess.Records(), session.TypeApprovalPolicy), "the session was made after the mount")
	require.NoError(t, p.fiber.Update(policy))
	pol := ofType(sess.Records(), session.TypeApprovalPolicy)
	require.Len(t, pol, 1)
	got, err := session.DecodeData[session.ApprovalPolicy](pol[0])
	require.NoError(t, err)
	assert.Equal(t, policy.Policy(), got)
	require.NoError(t, p.fiber.Update(policy))
	assert.Len(t, ofType(sess.Records(), session.TypeApprovalPolicy), 1, "an unchanged policy is not logged again")
}

func TestAnInvalidPatternIsAConfigErrorWithItsPosition(t *testing.T) {
	cases := []struct {
		name, rule, at, want string
		is                   error
	}{
		{"regexp", `{ tool: shell, arguments: "rm(", action: deny }`, "plugins.yaml:4:7: approvals: ", "missing closing )", config.ErrInvalid},
		{"glob", `{ tool: "[a", action: deny }`, "plugins.yaml:4:7: approvals: ", "syntax error in pattern", config.ErrInvalid},
		// A closed set is checked as the file is decoded, at the value.
		{"action", `{ tool: shell, action: maybe }`, "plugins.yaml:5:34: ", `"maybe" here: one of allow, deny, ask`, config.ErrType},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			yaml := "plugins:\n  - name: approvals\n    config:\n      rules:\n        - " + tc.rule + "\n"
			_, err := config.Parse("plugins.yaml", []byte(yaml), nil)
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tc.at), err.Error())
			assert.Contains(t, err.Error(), tc.want)
			assert.ErrorIs(t, err, tc.is)
		})
	}
}

func memoryStore(t *testing.T) session.Store {
	t.Helper()
	return memory.New()
}

// TestAPolicyChangedDuringATurnIsLoggedBeforeItDecides: a config change
// while a turn is suspended is not logged into the open turn at once, but
// before the first call it decides, so the log's policy in force is the
// one that answered.
func TestAPolicyChangedDuringATurnIsLoggedBeforeItDecides(t *testing.T) {
	ctx := context.Background()
	p := newProc(t, memoryStore(t), policy)
	sess, err := p.mgr.Create(ctx)
	require.NoError(t, err)
	a := p.agent(
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read_file"}}},
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "list_dir"}}},
		scripted.Reply{Text: "done"})
	res, err := a.Run(ctx, sess, "go")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	stricter := &approvals.Config{Default: "ask"}
	require.NoError(t, p.fiber.Update(stricter))
	assert.Len(t, ofType(sess.Records(), session.TypeApprovalPolicy), 1, "not logged into the open turn on mount")
	_, err = agentloop.Decide(ctx, sess, res.Pending[0].Call.ID, agentloop.Decision{Allow: true})
	require.NoError(t, err)
	res, err = a.Resume(ctx, sess)
	require.ErrorIs(t, err, agentloop.ErrSuspended, "list_dir asks under the new policy")
	require.Len(t, res.Pending, 1)
	assert.Equal(t, "list_dir", res.Pending[0].Call.Name)
	pols := ofType(sess.Records(), session.TypeApprovalPolicy)
	require.Len(t, pols, 2)
	got, err := session.DecodeData[session.ApprovalPolicy](pols[1])
	require.NoError(t, err)
	assert.Equal(t, stricter.Policy(), got)
	assert.Less(t, pols[1].Seq(), res.Pending[0].CallSeq)
}
