package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// vandal is a provider that keeps a deep copy of every request it is
// handed and then writes that request, everywhere it can, as a provider
// that trims, redacts or truncates its input might. When fail says so,
// it then fails the call with a retryable error, so the loop hands the
// same request again.
type vandal struct {
	p    agentloop.Provider
	fail func(call int) bool

	mu  sync.Mutex
	got []agentloop.Request
}

func (v *vandal) Stream(ctx context.Context, r *agentloop.Request) (agentloop.Stream, error) {
	v.mu.Lock()
	v.got = append(v.got, agentloop.Request{Session: r.Session, Turn: r.Turn, Step: r.Step, StepStart: r.StepStart,
		Header: session.CloneHeader(r.Header), Messages: session.NewMessages(r.Messages.Clone())})
	call := len(v.got)
	v.mu.Unlock()
	s, err := v.p.Stream(ctx, r)
	vandalize(r)
	if v.fail != nil && v.fail(call) {
		return nil, &agentloop.ProviderError{Provider: "vandal", Status: 503, Retryable: true, Err: errors.New("unavailable")}
	}
	return s, err
}

func (v *vandal) received() []agentloop.Request {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]agentloop.Request(nil), v.got...)
}

// vandalize rewrites every part of r a provider can reach: the tool
// calls of each message it reads (its own copies), its messages (which it
// cannot write: it puts a trimmed, forged list in their place, each
// message moved one place down), and in place the header's strings,
// sampling and tool parameters byte by byte.
func vandalize(r *agentloop.Request) {
	for _, m := range r.Messages.All() {
		for j := range m.ToolCalls {
			m.ToolCalls[j] = session.ToolCall{ID: forged, Name: forged, Arguments: forged}
		}
	}
	ms := r.Messages.Clone()
	if len(ms) > 1 {
		copy(ms, ms[1:])
	}
	for i := range ms {
		m := &ms[i]
		m.Content, m.Reasoning, m.Name = forged, forged, forged
		for j := range m.ToolCalls {
			m.ToolCalls[j] = session.ToolCall{ID: forged, Name: forged, Arguments: forged}
		}
	}
	r.Messages = session.NewMessages(ms[:len(ms)/2])
	h := &r.Header
	h.System, h.Model = forged, forged
	for i := range h.Tools {
		h.Tools[i].Description = forged
		for k := range h.Tools[i].Parameters {
			h.Tools[i].Parameters[k] = ' '
		}
	}
	for i := range h.Stop {
		h.Stop[i] = forged
	}
	if h.Temperature != nil {
		*h.Temperature = 2
	}
	h.MaxTokens = 1
}

// TestProviderWritesToItsRequestChangeNothing: the provider is handed a
// request of its own, with messages it cannot write and a header of its
// own, so whatever it does to it — messages replaced, the tool calls it
// reads, the header and tool parameters in place — reaches neither the
// next request nor a digest, at a later step, a later turn or a retry of the
// same step: every request it receives is the fold of the log and the
// logged header, with the logged digest.
func TestProviderWritesToItsRequestChangeNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(call int) bool
	}{
		{name: "every step"},
		{name: "and a retry of the same step", fail: func(call int) bool { return call == 3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			sp, err := scripted.New(scripted.Config{Repeat: true, Script: []scripted.Reply{
				{Text: "Let me look.", ToolCalls: []scripted.ToolCall{{Name: "echo", Arguments: map[string]any{"x": 1}}}},
				{Text: "Done."},
			}})
			require.NoError(t, err)
			v := &vandal{p: sp, fail: tc.fail}
			temp := 0.5
			echo := funcTool{name: "echo", fn: func(context.Context, json.RawMessage) (string, error) { return "echoed", nil }}
			a := agentloop.New(e.c, agentloop.Config{Model: "m", System: "be brief", Temperature: &temp, Stop: []string{"END"}, MaxTokens: 100},
				agentloop.WithProvider(v), agentloop.WithTools(echo),
				agentloop.WithBackoff(func(int, *agentloop.ProviderError) time.Duration { return 0 }))
			sess := e.session()
			for _, prompt := range []string{"first", "second", "third"} {
				res, err := a.Run(context.Background(), sess, prompt)
				require.NoError(t, err)
				require.Equal(t, session.ReasonCompleted, res.Reason)
			}

			recs := sess.Records()
			assert.Len(t, ofType(recs, session.TypeRequestHeader), 1, "the header never changed")
			digests := ofType(recs, session.TypeRequestDigest)
			got := v.received()
			retries := 0
			if tc.fail != nil {
				retries = 1
			}
			require.Len(t, got, len(digests)+retries, "one digest per step, a retry logs none")
			d := 0
			for i, r := range got {
				if i > 0 && got[i-1].StepStart == r.StepStart {
					d-- // the retry: the same step's request
				}
				var before []session.Record
				for _, rec := range recs {
					if rec.Seq() < r.StepStart {
						before = append(before, rec)
					}
				}
				msgs, err := session.DeriveMessages(before)
				require.NoError(t, err)
				assert.Equal(t, msgs, r.Messages.Clone(), "request %d is the fold of the log", i)
				logged := decode[session.Digest](t, digests[d])
				assert.Equal(t, logged.SHA256, session.RequestDigest(r.Header, r.Messages.Clone()), "request %d has the logged digest", i)
				assert.Equal(t, "be brief", r.Header.System)
				assert.Equal(t, `{"type":"object"}`, string(r.Header.Tools[0].Parameters))
				assert.Equal(t, []string{"END"}, r.Header.Stop)
				assert.InDelta(t, 0.5, *r.Header.Temperature, 0)
				d++
			}
			verifyLog(t, sess.Info(), recs)
		})
	}
}
