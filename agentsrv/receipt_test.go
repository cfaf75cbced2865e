package agentsrv_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/agentsrv"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	_ "github.com/vigil-run/vigil/plugins/store/memory" // store/memory, by name
	"github.com/vigil-run/vigil/session"
)

// A receipt stands at its turn's end and names the digest of the turn's
// last model request, also once later turns were added (it is then read
// from the whole log).
func TestReceiptOfATurnAndOfAnEarlierOne(t *testing.T) {
	ctx := context.Background()
	rt, err := vigil.Open(ctx, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{{Text: "one"}, {Text: "two"}}}),
		vigil.Plugin("agent", agentloop.Config{}),
	))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	first, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "1"})
	require.NoError(t, err)
	r1, err := agentsrv.ReceiptOf(ctx, rt, first)
	require.NoError(t, err)
	second, err := rt.Turn(ctx, vigil.TurnOptions{Session: first.Session, Prompt: "2"})
	require.NoError(t, err)
	r2, err := agentsrv.ReceiptOf(ctx, rt, second)
	require.NoError(t, err)
	again, err := agentsrv.ReceiptOf(ctx, rt, first)
	require.NoError(t, err)
	assert.Equal(t, r1, again, "an earlier turn's receipt is the same once later turns were added")

	log, err := rt.Session(ctx, first.Session)
	require.NoError(t, err)
	var ends []int64
	var shas []string
	for _, rec := range log.Records {
		switch rec.Type() {
		case session.TypeTurnEnd:
			ends = append(ends, rec.Seq())
		case session.TypeRequestDigest:
			d, err := session.DecodeData[session.Digest](rec)
			require.NoError(t, err)
			shas = append(shas, d.SHA256)
		}
	}
	require.Len(t, ends, 2)
	require.Len(t, shas, 2)
	assert.Equal(t, agentsrv.Receipt{Session: first.Session, Turn: 1, Seq: ends[0], RequestDigest: shas[0]}, r1)
	assert.Equal(t, agentsrv.Receipt{Session: first.Session, Turn: 2, Seq: ends[1], RequestDigest: shas[1]}, r2)

	_, err = agentsrv.ReceiptOf(ctx, rt, &vigil.Result{Session: first.Session, Turn: 3})
	assert.Error(t, err, "no receipt of a turn the session lacks")
}

// Agents offered under one name are left out, with an error naming
// them; the others are offered.
func TestAgentsUnderOneNameAreLeftOut(t *testing.T) {
	ctx := context.Background()
	summarizer := vigil.Plugin("agent", agentloop.Config{Delegation: agentloop.Delegation{AsTool: &agentloop.AsTool{Name: "helper"}}})
	summarizer.ID = "summarizer"
	helper := vigil.Plugin("agent", agentloop.Config{})
	helper.ID = "helper"
	main := vigil.Plugin("agent", agentloop.Config{Delegation: agentloop.Delegation{Tools: []agentloop.Ref{{Name: "helper"}}}})
	rt, err := vigil.Open(ctx, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{}),
		main, summarizer, helper,
	))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, rt.Close()) })
	agents, err := agentsrv.Agents(rt)
	require.ErrorContains(t, err, `agents helper, summarizer are all offered as "helper"`)
	require.Len(t, agents, 1)
	assert.Equal(t, "agent", agents[0].Tool.Name)
}
