package openai

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
	"github.com/vigil-run/vigil/session"
)

func TestStreamYieldsTextDeltasThenUsageAndFinish(t *testing.T) {
	srv := providertest.NewServer(t, sse(t, "text"))
	s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	chunks, err := providertest.Collect(s)
	require.NoError(t, err)

	require.Len(t, chunks, 16, "15 text deltas and one final chunk")
	for _, c := range chunks[:15] {
		assert.NotEmpty(t, c.Text)
		assert.Nil(t, c.Usage)
		assert.Empty(t, c.Finish)
	}
	assert.Equal(t, agentloop.Chunk{Usage: &session.Usage{Input: 24, Output: 15}, Finish: "stop"}, chunks[15])
	got := providertest.Assemble(chunks)
	assert.Equal(t, "The capital of France is Paris. It’s known for the Eiffel Tower.", got.Text)
	assert.Empty(t, got.ToolCalls)
}

func TestStreamJoinsParallelToolCallFragments(t *testing.T) {
	srv := providertest.NewServer(t, sse(t, "tool_calls"))
	s, err := newProvider(t, srv).Stream(context.Background(), fullRequest())
	require.NoError(t, err)
	chunks, err := providertest.Collect(s)
	require.NoError(t, err)

	// The first fragment of each call carries its id and name; the rest
	// carry only arguments.
	require.NotNil(t, chunks[0].ToolCall)
	assert.Equal(t, session.ChunkToolCall{Index: 0, ID: "call_q8Zl0vXh2cTj7YwK1mN4bR6s", Name: "get_weather"}, *chunks[0].ToolCall)
	assert.Equal(t, session.ChunkToolCall{Index: 0, Arguments: `{"ci`}, *chunks[1].ToolCall)
	got := providertest.Assemble(chunks)
	assert.Equal(t, []session.ToolCall{
		{ID: "call_q8Zl0vXh2cTj7YwK1mN4bR6s", Name: "get_weather", Arguments: `{"city": "Paris", "unit": "c"}`},
		{ID: "call_Hn3pW5sK9dLx2QaE7vTz0uYb", Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`},
	}, got.ToolCalls)
	assert.Equal(t, "tool_calls", got.Finish)
	assert.Equal(t, &session.Usage{Input: 88, Output: 51}, got.Usage)
	assert.Empty(t, got.Text)
}

func TestStreamYieldsDeepSeekReasoningContent(t *testing.T) {
	srv := providertest.NewServer(t, sse(t, "reasoning"))
	s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	chunks, err := providertest.Collect(s)
	require.NoError(t, err)

	got := providertest.Assemble(chunks)
	assert.Equal(t, "The user asks 9.11 vs 9.9. Compare decimals: 0.90 > 0.11.", got.Reasoning)
	assert.Equal(t, "9.9 is larger.", got.Text)
	assert.Equal(t, &session.Usage{Input: 18, Output: 64}, got.Usage)
	assert.Equal(t, "stop", got.Finish)
	// Reasoning comes first, and no chunk carries both kinds of text.
	assert.NotEmpty(t, chunks[0].Reasoning)
	for _, c := range chunks {
		assert.False(t, c.Text != "" && c.Reasoning != "", "chunk %+v mixes text and reasoning", c)
	}
}

func TestStreamNumbersToolCallsFromServersWithoutIndex(t *testing.T) {
	srv := providertest.NewServer(t, sse(t, "ollama_tools"))
	s, err := newProvider(t, srv, func(c *Config) { c.APIKey = "" }).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	chunks, err := providertest.Collect(s)
	require.NoError(t, err)

	got := providertest.Assemble(chunks)
	assert.Equal(t, []session.ToolCall{
		{ID: "call_1b2c3d4e", Name: "list_dir", Arguments: `{"path":"."}`},
		// A call that got no arguments still carries a JSON object.
		{ID: "call_5f6a7b8c", Name: "read_file", Arguments: `{}`},
	}, got.ToolCalls)
	assert.Equal(t, "tool_calls", got.Finish, "calls win over a finish_reason of stop")
	assert.Equal(t, &session.Usage{Input: 152, Output: 31}, got.Usage)
}

// TestStreamToolCallEdgeCases: an index wins over an id, an empty
// fragment is no call, and a call that is never named is a broken stream.
func TestStreamToolCallEdgeCases(t *testing.T) {
	tests := []struct {
		fixture string
		calls   []session.ToolCall
		err     error
	}{
		{"empty_tool_delta", []session.ToolCall{{ID: "call_0", Name: "list_dir", Arguments: `{"path":"."}`}}, nil},
		// Two calls that share an id stay two; the loop makes ids unique.
		{"shared_call_id", []session.ToolCall{
			{ID: "call_0", Name: "get_weather", Arguments: `{"city":"Paris"}`},
			{ID: "call_0", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
		}, nil},
		{"nameless_tool_call", nil, ErrMalformedStream},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			srv := providertest.NewServer(t, sse(t, tt.fixture))
			s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
			require.NoError(t, err)
			chunks, err := providertest.Collect(s)
			if tt.err != nil {
				assert.ErrorIs(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			got := providertest.Assemble(chunks)
			assert.Equal(t, tt.calls, got.ToolCalls)
			assert.Equal(t, "tool_calls", got.Finish)
		})
	}
}

func TestStreamEndsWithErrorOnBadJSONMidStream(t *testing.T) {
	srv := providertest.NewServer(t, sse(t, "malformed"))
	s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	chunks, err := providertest.Collect(s)

	require.Error(t, err)
	assert.ErrorIs(t, err, ErrMalformedStream)
	var pe *agentloop.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.False(t, pe.Retryable, "part of the reply was delivered")
	assert.Equal(t, "Hel", providertest.Assemble(chunks).Text, "the delivered prefix is kept")
}

func TestStreamEndsWithErrorWhenCutBeforeFinish(t *testing.T) {
	srv := providertest.NewServer(t, sse(t, "truncated"))
	s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	chunks, err := providertest.Collect(s)

	assert.ErrorIs(t, err, ErrMalformedStream)
	assert.Equal(t, "Once upon a", providertest.Assemble(chunks).Text)
}

func TestStreamErrorEventBecomesProviderError(t *testing.T) {
	srv := providertest.NewServer(t, sse(t, "error_event"))
	s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	chunks, err := providertest.Collect(s)

	var pe *agentloop.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "openai", pe.Provider)
	assert.False(t, pe.Retryable, "part of the reply was delivered")
	assert.Contains(t, err.Error(), "The server had an error while processing your request")
	assert.Equal(t, "Partial", providertest.Assemble(chunks).Text)
}

func TestStreamEmptyBodyIsRetryable(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{})
	s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	chunks, err := providertest.Collect(s)

	assert.Empty(t, chunks)
	var pe *agentloop.ProviderError
	require.ErrorAs(t, err, &pe)
	assert.True(t, pe.Retryable, "nothing was delivered")
}

func TestCancellingContextMidStreamEndsStream(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: fixture(t, "held"), Hold: true})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := newProvider(t, srv).Stream(ctx, simpleRequest())
	require.NoError(t, err)

	var texts []string
	var end error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c, err := range s {
			if err != nil {
				end = err
				return
			}
			texts = append(texts, c.Text)
			if len(texts) == 2 {
				cancel()
			}
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("stream did not end after cancellation")
	}
	assert.ErrorIs(t, end, context.Canceled)
	assert.Equal(t, []string{"Thinking", " about"}, texts[:2])
	srv.WaitHandled(1, 5*time.Second)
}

func TestBreakingOutOfStreamClosesConnection(t *testing.T) {
	srv := providertest.NewServer(t, providertest.Reply{Body: fixture(t, "held"), Hold: true})
	s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	for c, err := range s {
		require.NoError(t, err)
		require.Equal(t, "Thinking", c.Text)
		break
	}
	// The held handler returns only once the client hung up.
	srv.WaitHandled(1, 5*time.Second)
}

func TestStreamCanBeRangedOnce(t *testing.T) {
	srv := providertest.NewServer(t, sse(t, "text"))
	s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	_, err = providertest.Collect(s)
	require.NoError(t, err)
	_, err = providertest.Collect(s)
	assert.True(t, errors.Is(err, ErrStreamReused), "got %v", err)
}
