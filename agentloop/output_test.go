package agentloop_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

// okSchema is the output schema of these tests: {"ok": boolean}.
func okSchema() map[string]any {
	return map[string]any{
		"type": "object", "required": []any{"ok"}, "additionalProperties": false,
		"properties": map[string]any{"ok": map[string]any{"type": "boolean"}},
	}
}

func replyWith(chunks ...agentloop.Chunk) func(context.Context) (agentloop.Stream, error) {
	return func(context.Context) (agentloop.Stream, error) {
		return func(yield func(agentloop.Chunk, error) bool) {
			for _, c := range chunks {
				if !yield(c, nil) {
					return
				}
			}
		}, nil
	}
}

// TestOutputRetryIsAStepWithinMaxSteps: the retry is a step of the turn,
// so a turn with no step left ends with the validation error at once,
// without feedback.
func TestOutputRetryIsAStepWithinMaxSteps(t *testing.T) {
	e := newEnv(t)
	prov := script(t, scripted.Reply{Text: `{"ok":"yes"}`}, scripted.Reply{Text: `{"ok":true}`})
	a := agentloop.New(e.c, agentloop.Config{MaxSteps: 1, OutputSchema: okSchema()}, agentloop.WithProvider(prov), agentloop.WithTools())
	sess := e.session()
	res, err := a.Run(context.Background(), sess, "ok?")
	oe, ok := errors.AsType[*agentloop.OutputError](err)
	require.True(t, ok, "%v", err)
	assert.False(t, oe.Retried)
	assert.Equal(t, []string{"at '/ok': got string, want boolean"}, oe.Problems)
	assert.Equal(t, session.ReasonError, res.Reason)
	assert.Equal(t, 1, prov.Calls())
	assert.Equal(t, 1, len(ofType(sess.Records(), session.TypeUserMessage)), "no feedback")
}

// TestOutputIsTheLastStepsAnswer: the answer validated is the final
// step's, not an earlier step's text: a last step with no content is an
// empty answer, retried.
func TestOutputIsTheLastStepsAnswer(t *testing.T) {
	e := newEnv(t)
	echo := funcTool{name: "echo", fn: func(context.Context, json.RawMessage) (string, error) { return "echoed", nil }}
	rec := &recorder{replies: []func(context.Context) (agentloop.Stream, error){
		replyWith(agentloop.Chunk{Text: `{"ok":true}`}, agentloop.Chunk{ToolCall: &session.ChunkToolCall{ID: "c1", Name: "echo", Arguments: `{}`}}, agentloop.Chunk{Finish: session.FinishToolCalls}),
		replyWith(agentloop.Chunk{Finish: session.FinishStop}),
		replyWith(agentloop.Chunk{Text: `{"ok":false}`}, agentloop.Chunk{Finish: session.FinishStop}),
	}}
	a := agentloop.New(e.c, agentloop.Config{OutputSchema: okSchema()}, agentloop.WithProvider(rec), agentloop.WithTools(echo))
	sess := e.session()
	res, err := a.Run(context.Background(), sess, "ok?")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
	assert.Equal(t, `{"ok":false}`, res.Content)
	reqs := rec.requests()
	require.Len(t, reqs, 3)
	last := reqs[2].Messages.At(reqs[2].Messages.Len() - 1)
	assert.Equal(t, session.RoleUser, last.Role)
	assert.Contains(t, last.Content, "the answer is empty")
	for _, r := range reqs {
		assert.JSONEq(t, `{"additionalProperties":false,"properties":{"ok":{"type":"boolean"}},"required":["ok"],"type":"object"}`, string(r.Header.OutputSchema))
	}
}

// TestRunRefusesAnOutputSchemaThatDoesNotCompile: a Config built in Go
// and never validated still cannot run with a schema that is not JSON
// Schema; nothing is logged.
func TestRunRefusesAnOutputSchemaThatDoesNotCompile(t *testing.T) {
	e := newEnv(t)
	cfg := agentloop.Config{OutputSchema: map[string]any{"type": "strin"}}
	require.ErrorContains(t, cfg.Validate(), "output_schema is not a valid JSON Schema")
	a := agentloop.New(e.c, cfg, agentloop.WithProvider(&recorder{}), agentloop.WithTools())
	sess := e.session()
	res, err := a.Run(context.Background(), sess, "ok?")
	require.ErrorContains(t, err, "output_schema is not a valid JSON Schema")
	assert.Nil(t, res)
	assert.Empty(t, sess.Records())
}

// TestSealRefusesAnOutputSchemaEdit: a listener that edits the request's
// output schema (after the invariants check, which runs first) is
// refused by the seal; the provider never sees the request.
func TestSealRefusesAnOutputSchemaEdit(t *testing.T) {
	for _, schema := range []map[string]any{okSchema(), nil} {
		e := newEnv(t)
		agentloop.LLMStream.On(e.c, func(ctx context.Context, req *agentloop.Request, next bus.Next[*agentloop.Request, agentloop.Stream]) (agentloop.Stream, error) {
			req.Header.OutputSchema = json.RawMessage(`{"type":"object"}`)
			return next(ctx, req)
		})
		rec := &recorder{}
		a := agentloop.New(e.c, agentloop.Config{OutputSchema: schema}, agentloop.WithProvider(rec), agentloop.WithTools())
		_, err := a.Run(context.Background(), e.session(), "ok?")
		require.ErrorIs(t, err, agentloop.ErrRequestMutated)
		assert.Contains(t, err.Error(), "header output_schema changed")
		assert.Empty(t, rec.requests())
	}
}

// TestOutputRetryBoundHoldsAcrossAResume: the retry is counted from the
// log, so a turn suspended on an approval after its retry and resumed by
// another agent gets no second one.
func TestOutputRetryBoundHoldsAcrossAResume(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t)
	_, tools := workspace(t)
	askFor(e, "read_file")
	cfg := agentloop.Config{OutputSchema: okSchema()}
	a := agentloop.New(e.c, cfg, agentloop.WithTools(tools...), agentloop.WithProvider(script(t,
		scripted.Reply{Text: "not json"},
		scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "read_file", Arguments: map[string]any{"path": "go.mod"}}}},
	)))
	sess := e.session()
	res, err := a.Run(ctx, sess, "ok?")
	require.ErrorIs(t, err, agentloop.ErrSuspended)
	_, err = agentloop.Decide(ctx, sess, res.Pending[0].Call.ID, agentloop.Decision{Allow: true, By: "ann"})
	require.NoError(t, err)

	b := agentloop.New(e.c, cfg, agentloop.WithTools(tools...), agentloop.WithProvider(script(t, scripted.Reply{Text: `{"ok":"no"}`})))
	res, err = b.Resume(ctx, sess)
	oe, ok := errors.AsType[*agentloop.OutputError](err)
	require.True(t, ok, "%v", err)
	assert.True(t, oe.Retried)
	assert.Equal(t, session.ReasonError, res.Reason)
	var feedback int
	for _, r := range ofType(sess.Records(), session.TypeUserMessage) {
		if decode[session.UserMessage](t, r).Origin == session.OriginOutputValidation {
			feedback++
		}
	}
	assert.Equal(t, 1, feedback)
}
