package agentloop_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// A model's 10 MB tool call is logged whole, and echoed by nothing else:
// the error of a turn that waits for a decision on it, the result of a
// call of a tool no one has quote a bounded excerpt.
func TestATenMegabyteToolCallIsNeverEchoedWhole(t *testing.T) {
	const bound = 1 << 10
	huge := `{"text":"` + strings.Repeat("a", 10<<20) + `"}`
	noop := func(context.Context, json.RawMessage) (string, error) { return "written", nil }
	cfg := agentloop.Config{System: "s", Model: "scripted"}

	t.Run("a call that waits for a decision", func(t *testing.T) {
		e := newEnv(t)
		askFor(e, "write")
		reply := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "write", Arguments: huge}}}
		a := agentloop.New(e.c, cfg, agentloop.WithProvider(script(t, reply)), agentloop.WithTools(funcTool{name: "write", fn: noop}))
		sess := e.session()
		res, err := a.Run(context.Background(), sess, "write it")
		require.ErrorIs(t, err, agentloop.ErrSuspended)
		require.Len(t, res.Pending, 1)
		assert.Equal(t, huge, res.Pending[0].Call.Arguments, "the call itself is whole")
		assert.Less(t, len(err.Error()), bound)
		assert.Contains(t, err.Error(), "…(+")
		for _, r := range ofType(sess.Records(), session.TypeApprovalRequest) {
			assert.Less(t, len(r.Bytes()), bound)
		}
	})
	t.Run("a call of a tool no one has", func(t *testing.T) {
		e := newEnv(t)
		name := strings.Repeat("n", 10<<20)
		reply := scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: name, Arguments: huge}}}
		a := agentloop.New(e.c, cfg, agentloop.WithProvider(script(t, reply, scripted.Reply{Text: "ok"})))
		sess := e.session()
		_, err := a.Run(context.Background(), sess, "call it")
		require.NoError(t, err)
		results := ofType(sess.Records(), session.TypeToolResult)
		require.Len(t, results, 1)
		res := decode[session.ToolResult](t, results[0])
		require.NotNil(t, res.Error)
		assert.Equal(t, agentloop.CodeUnknownTool, res.Error.Code)
		assert.Less(t, len(res.Error.Message), bound)
	})
}
