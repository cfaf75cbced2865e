//go:build unix

package external_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/plugins/external"
	"github.com/vigil-run/vigil/session"
)

func TestPluginObservesTheEventsItSubscribedTo(t *testing.T) {
	h := newHost(t)
	h.mustLoad(testPlugin())
	sess := h.session()
	_, err := sess.Append(context.Background(), session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "hi"}})
	require.NoError(t, err)
	_, err = sess.Append(context.Background(), session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "there"}})
	require.NoError(t, err)
	// session/created, then only the types the plugin asked for, in order.
	assert.Equal(t, "created\n0 user/message\n1 user/message", h.call("seen", "{}"))
}

func TestPluginVetoRefusesTheAppend(t *testing.T) {
	h := newHost(t)
	h.mustLoad(&external.Config{Path: bins["testplugin"], Config: map[string]any{"veto": "secret"}})
	sess := h.session()
	ctx := context.Background()
	_, err := sess.Append(ctx, session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "hello"}})
	require.NoError(t, err)

	_, err = sess.Append(ctx, session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "the secret is 42"}})
	var veto *external.VetoError
	require.ErrorAs(t, err, &veto)
	assert.Equal(t, &external.VetoError{Plugin: "testplugin", Code: "TEST", Reason: "the message matches secret"}, veto)
	assert.Equal(t, 1, sess.Len(), "a vetoed event is not committed")
	// The observer saw only what was committed.
	assert.Equal(t, "created\n0 user/message", h.call("seen", "{}"))

	// The seq of the refused event is used by the next one.
	rec, err := sess.Append(ctx, session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "bye"}})
	require.NoError(t, err)
	assert.Equal(t, int64(1), rec.Seq())
	verify(t, sess)
}

func TestHostServicesReachThePluginsHost(t *testing.T) {
	h := newHost(t)
	h.mustLoad(testPlugin())
	sess := h.session()
	ctx := context.Background()
	_, err := sess.Append(ctx, session.Event{Type: session.TypeUserMessage, Data: session.UserMessage{Content: "what is 2+2?"}})
	require.NoError(t, err)

	t.Run("messages", func(t *testing.T) {
		var msgs []session.Message
		require.NoError(t, json.Unmarshal([]byte(h.call("messages", `{"session":"`+sess.ID()+`"}`)), &msgs))
		assert.Equal(t, sess.Messages(), msgs)

		_, err := h.tool("messages").Execute(ctx, json.RawMessage(`{"session":"nope"}`))
		require.ErrorContains(t, err, `no live session "nope"`)
	})

	t.Run("emit and log", func(t *testing.T) {
		var got []*external.Emission
		dispose := external.Emitted.On(sess.Context(), func(_ context.Context, e *external.Emission) error {
			got = append(got, e)
			return nil
		})
		defer dispose()
		other := h.session()
		assert.Equal(t, "emitted", h.call("emit", `{"session":"`+sess.ID()+`","data":{"n":1}}`))
		assert.Equal(t, "emitted", h.call("emit", `{"session":"`+other.ID()+`","data":{"n":2}}`))
		require.Len(t, got, 1, "a listener scoped to one session sees only its emissions")
		assert.Equal(t, &external.Emission{Plugin: "testplugin", Name: "test/emitted", Session: sess.ID(), Data: json.RawMessage(`{"n":1}`)}, got[0])
		assert.Contains(t, h.logs.String(), "[WARN]  external.testplugin: emitting: session="+sess.ID())
	})

	t.Run("a refused emission fails the plugin's call", func(t *testing.T) {
		dispose := external.Emitted.On(h.c, func(context.Context, *external.Emission) error {
			return assert.AnError
		})
		defer dispose()
		out, err := h.tool("emit").Execute(ctx, json.RawMessage(`{"data":null}`))
		require.Error(t, err, out)
		assert.Contains(t, err.Error(), assert.AnError.Error())
	})
}

func TestPluginLogsReachTheHostLogger(t *testing.T) {
	h := newHost(t)
	h.mustLoad(&external.Config{Path: bins["testplugin"], Config: map[string]any{"veto": "x"}})
	// sdk.Logger writes JSON to stderr; go-plugin re-emits it through the
	// fiber's logger at its level.
	require.Eventually(t, func() bool {
		return strings.Contains(h.logs.String(), "[INFO]  external.testplugin: configured: veto=x")
	}, 5e9, 1e7, h.logs.String())
}
