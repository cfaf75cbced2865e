package agentloop_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

// splitter streams a reply whose characters are cut between chunks and
// whose bytes are not all UTF-8: "é" split in its text, in a call's
// arguments and in its reasoning, and a call id with an invalid byte.
type splitter struct{}

func (splitter) Stream(_ context.Context, req *agentloop.Request) (agentloop.Stream, error) {
	if m := req.Messages; m.Len() > 0 && m.At(m.Len()-1).Role == session.RoleTool {
		return textStream("caf\xc3", "\xa9 \xff"), nil
	}
	return func(yield func(agentloop.Chunk, error) bool) {
		for _, c := range []agentloop.Chunk{
			{Reasoning: "th\xc3"}, {Reasoning: "\xa9"},
			{ToolCall: &session.ChunkToolCall{Index: 0, ID: "c\xff", Name: "calc", Arguments: "{\"expr\":\"\xc3"}},
			{ToolCall: &session.ChunkToolCall{Index: 0, Arguments: "\xa9\"}"}},
			{Finish: session.FinishToolCalls},
		} {
			if !yield(c, nil) {
				return
			}
		}
	}, nil
}

// TestChunksAreAssembledAsTheirRecordsHoldThem: a provider whose chunks
// cut a character or hold bytes that are not UTF-8 gets the message its
// logged chunks assemble (each invalid byte a U+FFFD, as the records hold
// them): the turn completes under the strict invariants, the tool sees
// the logged arguments, and the log verifies. A system prompt that is not
// UTF-8 is logged once: the header logged is the one in force.
func TestChunksAreAssembledAsTheirRecordsHoldThem(t *testing.T) {
	var got []string
	calc := funcTool{name: "calc", safe: true, fn: func(_ context.Context, args json.RawMessage) (string, error) {
		got = append(got, string(args))
		return "2", nil
	}}
	e := newEnv(t)
	a := agentloop.New(e.c, agentloop.Config{Model: "m", System: "be \xff"}, agentloop.WithProvider(splitter{}), agentloop.WithTools(calc))
	sess := e.session()
	res, err := a.Run(context.Background(), sess, "hi")
	require.NoError(t, err)
	require.Equal(t, session.ReasonCompleted, res.Reason)

	recs := sess.Records()
	headers := ofType(recs, session.TypeRequestHeader)
	require.Len(t, headers, 1)
	assert.Equal(t, "be \uFFFD", decode[session.RequestHeader](t, headers[0]).Header.System)
	msgs := ofType(recs, session.TypeAssistantMessage)
	require.Len(t, msgs, 2)
	first := decode[session.AssistantMessage](t, msgs[0])
	assert.Equal(t, "th\uFFFD\uFFFD", first.Reasoning)
	require.Len(t, first.ToolCalls, 1)
	assert.Equal(t, "c\uFFFD", first.ToolCalls[0].ID)
	assert.Equal(t, "{\"expr\":\"\uFFFD\uFFFD\"}", first.ToolCalls[0].Arguments)
	assert.Equal(t, []string{first.ToolCalls[0].Arguments}, got)
	assert.Equal(t, "caf\uFFFD\uFFFD \uFFFD", decode[session.AssistantMessage](t, msgs[1]).Content)

	data := session.AppendHeaderLine(nil, sess.Info())
	for _, r := range recs {
		data = r.AppendLine(data)
	}
	rep, err := invariants.Verify(bytes.NewReader(data))
	require.NoError(t, err)
	assert.Empty(t, rep.Violations)
}
