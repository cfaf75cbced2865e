package vigil_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// A session's header names its tenant and creator; a fork keeps the
// tenant and names its own creator; a queued turn names who posted it, in
// its job and on its turn/start.
func TestOwnersAreLoggedWhereTheyAct(t *testing.T) {
	ctx := context.Background()
	rt := open(t, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "ok"}}, Repeat: true}),
		vigil.Plugin("agent", nil),
	))
	id, err := rt.NewSession(ctx, vigil.Tenant("acme"), vigil.By("alice"))
	require.NoError(t, err)
	job, _, err := rt.QueueTurn(ctx, id, "hello", vigil.By("bob"))
	require.NoError(t, err)
	var in struct{ By string }
	require.NoError(t, json.Unmarshal(job.Input, &in))
	assert.Equal(t, "bob", in.By, "the job says who posted it")
	waitJobs(t, jobs(t, rt, 1), 1)

	log, err := rt.Session(ctx, id)
	require.NoError(t, err)
	assert.Equal(t, [2]string{"acme", "alice"}, [2]string{log.Info.Tenant, log.Info.By})
	require.Equal(t, session.TypeTurnStart, log.Records[0].Type())
	start, err := session.DecodeData[session.TurnStart](log.Records[0])
	require.NoError(t, err)
	assert.Equal(t, "bob", start.By)

	fork, err := rt.Fork(ctx, id, int64(len(log.Records)-1), vigil.By("carol"))
	require.NoError(t, err)
	flog, err := rt.Session(ctx, fork)
	require.NoError(t, err)
	assert.Equal(t, [2]string{"acme", "carol"}, [2]string{flog.Info.Tenant, flog.Info.By})

	_, err = rt.Fork(ctx, id, -1, vigil.Tenant("other"))
	require.Error(t, err, "a fork cannot change tenant")
	_, _, err = rt.QueueTurn(ctx, id, "x", vigil.Tenant("other"))
	require.Error(t, err)

	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "new", By: "dave"})
	require.NoError(t, err)
	nlog, err := rt.Session(ctx, res.Session)
	require.NoError(t, err)
	assert.Equal(t, [2]string{"", "dave"}, [2]string{nlog.Info.Tenant, nlog.Info.By})
	start, err = session.DecodeData[session.TurnStart](nlog.Records[0])
	require.NoError(t, err)
	assert.Equal(t, "dave", start.By)
}

// A sub-agent's child session belongs to its parent's tenant.
func TestAChildSessionInheritsTheTenant(t *testing.T) {
	ctx := context.Background()
	rt := open(t, delegating(agentloop.Config{},
		scripted.Reply{ToolCalls: []scripted.ToolCall{research("why?")}},
		scripted.Reply{Text: "because"},
		scripted.Reply{Text: "done"},
	))
	id, err := rt.NewSession(ctx, vigil.Tenant("acme"), vigil.By("alice"))
	require.NoError(t, err)
	res, err := rt.Turn(ctx, vigil.TurnOptions{Session: id, Prompt: "plan", By: "bob"})
	require.NoError(t, err)
	log, err := rt.Session(ctx, res.Session)
	require.NoError(t, err)
	rs := results(t, log)
	require.Len(t, rs, 1)
	require.NotNil(t, rs[0].Child)
	child, err := rt.Session(ctx, rs[0].Child.ID)
	require.NoError(t, err)
	assert.Equal(t, "acme", child.Info.Tenant)
	assert.Equal(t, "alice", child.Info.By)
}
