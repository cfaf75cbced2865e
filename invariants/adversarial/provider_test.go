package adversarial_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// trimmer is a provider that, once the recorder kept what it was handed,
// trims and rewrites the request, as a third-party provider that redacts
// or truncates its input might: its messages cannot be written, so it
// writes the tool calls of every message it reads (its own copies) and
// puts a trimmed, forged list in their place, with each message moved one
// place down; then it forges the header's strings, sampling and tool
// parameters (byte by byte) in place.
type trimmer struct{ rec *recorder }

func (p trimmer) Name() string { return "trimmer" }

func (p trimmer) Stream(ctx context.Context, r *agentloop.Request) (agentloop.Stream, error) {
	s, err := p.rec.Stream(ctx, r)
	for _, m := range r.Messages.All() {
		for j := range m.ToolCalls {
			m.ToolCalls[j].Arguments = forged
		}
	}
	ms := r.Messages.Clone()
	if len(ms) > 1 {
		copy(ms, ms[1:])
	}
	for i := range ms {
		ms[i].Content = forged
		for j := range ms[i].ToolCalls {
			ms[i].ToolCalls[j].Arguments = forged
		}
	}
	r.Messages = session.NewMessages(ms)
	h := &r.Header
	h.System = forged
	for i := range h.Tools {
		h.Tools[i].Description = forged
		copy(h.Tools[i].Parameters, forged)
	}
	for i := range h.Stop {
		h.Stop[i] = forged
	}
	if h.Temperature != nil {
		*h.Temperature = 2
	}
	return s, err
}

// echoTool is a tool with parameters, so the header carries some.
type echoTool struct{}

func (echoTool) Spec() session.ToolSpec {
	return session.ToolSpec{Name: "echo", Description: "echoes", Parameters: json.RawMessage(`{"type":"object","properties":{"x":{"type":"integer"}}}`)}
}

func (echoTool) Execute(context.Context, json.RawMessage) (string, error) { return "echoed", nil }

// Door 5: the provider wrapper handed the provider the loop's own fold and
// header, so a provider that edits its request in place changed what the
// next step sent while the logged digest still stated the log's fold, and
// neither the check, the seal nor verify noticed. The provider now gets
// messages it cannot write and a header of its own: every later request
// is the log's fold with the logged digest.
func TestProviderWritingItsRequestChangesNothing(t *testing.T) {
	for _, mode := range []string{invariants.ModeStrict, ""} {
		t.Run("invariants="+mode, func(t *testing.T) {
			w := newWorldWithoutProvider(t, mode)
			sp, err := scripted.New(scripted.Config{Repeat: true, Script: []scripted.Reply{
				{ToolCalls: []scripted.ToolCall{{Name: "echo", Arguments: map[string]any{"x": 1}}}},
				{Text: "ok"},
			}})
			require.NoError(t, err)
			w.rec.p = sp
			w.mount(t, &bus.Func[any]{ID: "trimmer", Run: func(c *bus.Context, _ any) error {
				_, err := agentloop.ProviderService.Provide(c, trimmer{w.rec})
				return err
			}}, nil)
			sess := w.session(t)
			temp := 0.5
			a := agentloop.New(w.c, agentloop.Config{Model: "m", System: "be brief", Temperature: &temp, Stop: []string{"END"}},
				agentloop.WithTools(echoTool{}))
			t.Cleanup(func() { _ = a.Close() })
			for _, prompt := range []string{"first", "second", "third"} {
				res, err := a.Run(context.Background(), sess, prompt)
				require.NoError(t, err)
				require.Equal(t, session.ReasonCompleted, res.Reason)
			}

			assert.False(t, w.rec.sawForged(), "the provider never receives forged content")
			assert.Equal(t, 1, count(sess.Records(), session.TypeRequestHeader), "the header never changed")
			got := w.rec.received()
			require.Len(t, got, 6)
			w.requireLoggedDigests(t, sess)
			for _, r := range got {
				assert.Equal(t, "be brief", r.Header.System)
				assert.JSONEq(t, string(echoTool{}.Spec().Parameters), string(r.Header.Tools[0].Parameters))
				assert.Equal(t, []string{"END"}, r.Header.Stop)
			}
			w.requireVerifies(t, sess)
		})
	}
}

// requireLoggedDigests checks that every request the provider received
// has the digest its step logged: the provider got what the log states.
func (w *world) requireLoggedDigests(t *testing.T, sess *live.Session) {
	t.Helper()
	var logged []string
	for _, r := range sess.Records() {
		if r.Type() == session.TypeRequestDigest {
			d, err := session.DecodeData[session.Digest](r)
			require.NoError(t, err)
			logged = append(logged, d.SHA256)
		}
	}
	got := w.rec.received()
	require.Len(t, logged, len(got))
	for i, r := range got {
		assert.Equal(t, logged[i], session.RequestDigest(r.Header, r.Messages.Clone()), "request %d has the logged digest", i)
	}
}
