package agentloop_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/plugins/provider/replay"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/jsonl"
	"github.com/vigil-run/vigil/session/live"
)

// reuser behaves like the OpenAI-compatible servers that number their
// calls from call_0 in every response: after a user message it streams
// the same tool-call deltas every time, after a tool result it answers in
// text.
type reuser struct{ deltas []session.ChunkToolCall }

func (r reuser) Stream(_ context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	if m := req.Messages; m.Len() > 0 && m.At(m.Len()-1).Role == session.RoleTool {
		return textStream("done"), nil
	}
	return func(yield func(agentloop.Chunk, error) bool) {
		for _, d := range r.deltas {
			if !yield(agentloop.Chunk{ToolCall: &d}, nil) {
				return
			}
		}
		yield(agentloop.Chunk{Finish: session.FinishToolCalls}, nil)
	}, nil
}

// callIDsOf returns the call ids the records of typ carry, in log order
// (for chunks, those that carry one).
func callIDsOf(t *testing.T, recs []session.Record, typ string) []string {
	t.Helper()
	var out []string
	for _, r := range ofType(recs, typ) {
		switch typ {
		case session.TypeToolCall:
			out = append(out, decode[session.ToolCall](t, r).ID)
		case session.TypeToolResult:
			out = append(out, decode[session.ToolResult](t, r).ID)
		case session.TypeAssistantMessage:
			for _, c := range decode[session.AssistantMessage](t, r).ToolCalls {
				out = append(out, c.ID)
			}
		case session.TypeAssistantChunk:
			if c := decode[session.AssistantChunk](t, r).ToolCall; c != nil && c.ID != "" {
				out = append(out, c.ID)
			}
		}
	}
	return out
}

// TestRepeatedCallIDsAreMadeUniqueInTheLog: a provider that repeats (or
// omits) tool-call ids across responses, or within one, gets ids unique in
// the session on the chunks, the message and the calls alike; the turns
// complete under the strict invariants, later requests send those ids
// back, and a replay of the log reproduces them and every request.
func TestRepeatedCallIDsAreMadeUniqueInTheLog(t *testing.T) {
	calc := funcTool{name: "calc", safe: true, fn: func(context.Context, json.RawMessage) (string, error) { return "2", nil }}
	for _, tc := range []struct {
		name   string
		deltas []session.ChunkToolCall
		chunks []string // ids on the chunks that carry one, over three turns
		calls  []string // tool/call ids over three turns
	}{{
		name: "id on the first fragment",
		deltas: []session.ChunkToolCall{
			{Index: 0, ID: "call_0", Name: "calc", Arguments: `{"expr":`},
			{Index: 0, Arguments: `"1+1"}`},
		},
		chunks: []string{"call_0", "call_0_2_1_0", "call_0_3_1_0"},
		calls:  []string{"call_0", "call_0_2_1_0", "call_0_3_1_0"},
	}, {
		name: "id on every fragment",
		deltas: []session.ChunkToolCall{
			{Index: 0, ID: "call_0", Name: "calc", Arguments: `{"expr":`},
			{Index: 0, ID: "call_0", Arguments: `"1+1"}`},
		},
		chunks: []string{"call_0", "call_0", "call_0_2_1_0", "call_0_2_1_0", "call_0_3_1_0", "call_0_3_1_0"},
		calls:  []string{"call_0", "call_0_2_1_0", "call_0_3_1_0"},
	}, {
		name: "one id at two indices",
		deltas: []session.ChunkToolCall{
			{Index: 0, ID: "call_0", Name: "calc", Arguments: `{}`},
			{Index: 1, ID: "call_0", Name: "calc", Arguments: `{}`},
		},
		chunks: []string{"call_0", "call_0_1_1_1", "call_0_2_1_0", "call_0_2_1_1", "call_0_3_1_0", "call_0_3_1_1"},
		calls:  []string{"call_0", "call_0_1_1_1", "call_0_2_1_0", "call_0_2_1_1", "call_0_3_1_0", "call_0_3_1_1"},
	}, {
		name:   "no id",
		deltas: []session.ChunkToolCall{{Index: 0, Name: "calc", Arguments: `{}`}},
		chunks: []string{"call_1_1_0", "call_2_1_0", "call_3_1_0"},
		calls:  []string{"call_1_1_0", "call_2_1_0", "call_3_1_0"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			rec := &recorder{}
			a := agentloop.New(e.c, agentloop.Config{Model: "m"}, agentloop.WithProvider(recordingProvider{rec, reuser{tc.deltas}}), agentloop.WithTools(calc))
			sess := e.session()
			for turn := 1; turn <= 3; turn++ {
				res, err := a.Run(context.Background(), sess, "compute")
				require.NoError(t, err, "turn %d", turn)
				require.Equal(t, session.ReasonCompleted, res.Reason)
			}
			recs := sess.Records()
			assert.Equal(t, tc.chunks, callIDsOf(t, recs, session.TypeAssistantChunk))
			assert.Equal(t, tc.calls, callIDsOf(t, recs, session.TypeAssistantMessage))
			assert.Equal(t, tc.calls, callIDsOf(t, recs, session.TypeToolCall))
			assert.Equal(t, tc.calls, callIDsOf(t, recs, session.TypeToolResult))

			// The last request sends every id back, paired.
			reqs := rec.requests()
			require.NotEmpty(t, reqs)
			var asked, answered []string
			for _, m := range reqs[len(reqs)-1].Messages.All() {
				for _, c := range m.ToolCalls {
					asked = append(asked, c.ID)
				}
				if m.Role == session.RoleTool {
					answered = append(answered, m.ToolCallID)
				}
			}
			assert.Equal(t, tc.calls, asked)
			assert.Equal(t, tc.calls, answered)

			// A replay re-serves the logged chunks and logs the same ids.
			w := newEnv(t)
			rr, err := replay.Run(context.Background(), w.c, w.mgr, recs)
			require.NoError(t, err)
			assert.Empty(t, rr.Errors)
			assert.True(t, rr.Identical(), "%+v", rr.Steps)
			assert.Equal(t, tc.chunks, callIDsOf(t, rr.Session.Records(), session.TypeAssistantChunk))
			assert.Equal(t, tc.calls, callIDsOf(t, rr.Session.Records(), session.TypeToolCall))
		})
	}
}

// recordingProvider records the requests p receives.
type recordingProvider struct {
	rec *recorder
	p   agentloop.Provider
}

func (r recordingProvider) Stream(ctx context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	r.rec.mu.Lock()
	r.rec.reqs = append(r.rec.reqs, req)
	r.rec.mu.Unlock()
	return r.p.Stream(ctx, req)
}

// TestRepeatedCallIDsVerifyWithoutInvariants: with no invariants plugin
// to refuse anything, the log the loop writes for a provider repeating
// call_0 still passes `vigil verify`'s checks.
func TestRepeatedCallIDsVerifyWithoutInvariants(t *testing.T) {
	dir := t.TempDir()
	store, err := jsonl.Open(dir)
	require.NoError(t, err)
	root := bus.New()
	t.Cleanup(func() { _ = root.Dispose() })
	mgr := live.NewManager(root.Context(), store)
	calc := funcTool{name: "calc", fn: func(context.Context, json.RawMessage) (string, error) { return "2", nil }}
	a := agentloop.New(root.Context(), agentloop.Config{Model: "m"}, agentloop.WithProvider(reuser{[]session.ChunkToolCall{{Index: 0, ID: "call_0", Name: "calc", Arguments: `{}`}}}), agentloop.WithTools(calc))
	sess, err := mgr.Create(context.Background())
	require.NoError(t, err)
	for range 3 {
		res, err := a.Run(context.Background(), sess, "compute")
		require.NoError(t, err)
		require.Equal(t, session.ReasonCompleted, res.Reason)
	}
	n := sess.Len()
	require.NoError(t, sess.Close(context.Background()))
	require.NoError(t, store.Close())
	rep, err := invariants.VerifyFile(store.Path(sess.ID()))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
	assert.Equal(t, n, rep.Events)
}
