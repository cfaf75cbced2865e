package mcp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/tools/mcp"
	"github.com/vigil-run/vigil/plugins/tools/mcp/internal/testserver"
	"github.com/vigil-run/vigil/session"
)

// TestCallCarriesIdempotencyKeyInMeta: the server receives the call's
// key in the request's _meta, over both transports, and the server's
// annotations are logged as the tools' declaration.
func TestCallCarriesIdempotencyKeyInMeta(t *testing.T) {
	require.Equal(t, testserver.MetaIdempotencyKey, mcp.MetaIdempotencyKey)
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			cfg := tr.config(t, "srv_") // before the host: disposed after it
			h := newHost(t, callOf("srv_key", map[string]any{}), say("done"))
			h.mcp(cfg)
			s := h.session()
			h.turn(context.Background(), s, "key?", session.ReasonCompleted)

			call := decode[session.ToolCall](t, ofType(s, session.TypeToolCall)[0])
			got := results(t, s)
			require.Len(t, got, 1)
			assert.Equal(t, session.IdempotencyKey(s.ID(), call.ID), got[0].Content)

			hdr := decode[session.RequestHeader](t, ofType(s, session.TypeRequestHeader)[0])
			idem := map[string]bool{}
			for _, ts := range hdr.Header.Tools {
				idem[ts.Name] = ts.Idempotent
			}
			assert.True(t, idem["srv_key"], "idempotentHint")
			assert.True(t, idem["srv_echo"], "readOnlyHint: nothing to repeat")
			assert.Contains(t, idem, "srv_fail")
			assert.False(t, idem["srv_fail"], "no hint: the default")
			verify(t, s)
		})
	}
}
