//go:build unix

package external_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// TestToolCallCarriesIdempotencyKey: the plugin process's tool gets the
// call's key over the wire, and the tool's declaration (idempotent or
// not) is logged with its description in the request/header.
func TestToolCallCarriesIdempotencyKey(t *testing.T) {
	h := newHost(t)
	h.mustLoad(&external.Config{Path: bins["testplugin"]})
	prov := scriptedProvider(t,
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "key"}, {Name: "key"}}},
		scripted.Reply{Text: "done"},
	)
	a := agentloop.New(h.c, agentloop.Config{}, agentloop.WithProvider(prov))
	sess := h.session()
	_, err := a.Run(context.Background(), sess, "keys?")
	require.NoError(t, err)

	recs := sess.Records()
	var want, got []string
	for _, r := range ofType(recs, session.TypeToolCall) {
		c, err := session.DecodeData[session.ToolCall](r)
		require.NoError(t, err)
		want = append(want, session.IdempotencyKey(sess.ID(), c.ID))
	}
	require.Len(t, want, 2)
	for _, r := range ofType(recs, session.TypeToolResult) {
		res, err := session.DecodeData[session.ToolResult](r)
		require.NoError(t, err)
		require.Nil(t, res.Error)
		got = append(got, res.Content)
	}
	assert.Equal(t, want, got)
	assert.NotEqual(t, got[0], got[1])

	hdr, err := session.DecodeData[session.RequestHeader](ofType(recs, session.TypeRequestHeader)[0])
	require.NoError(t, err)
	idem := map[string]bool{}
	for _, ts := range hdr.Header.Tools {
		idem[ts.Name] = ts.Idempotent
	}
	assert.True(t, idem["key"], "declared idempotent")
	assert.Contains(t, idem, "echo")
	assert.False(t, idem["echo"], "not declared: the default")
	verify(t, sess)
}
