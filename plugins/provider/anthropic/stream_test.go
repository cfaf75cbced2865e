package anthropic

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
	"github.com/vigil-run/vigil/session"
)

func stream(t *testing.T, fixtureName string) ([]agentloop.Chunk, error) {
	t.Helper()
	srv := providertest.NewServer(t, sse(t, fixtureName))
	s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	return providertest.Collect(s)
}

func TestStreamYieldsTextDeltasThenUsageAndFinish(t *testing.T) {
	chunks, err := stream(t, "text")
	require.NoError(t, err)

	require.Len(t, chunks, 15, "14 text deltas and one final chunk")
	for _, c := range chunks[:14] {
		assert.NotEmpty(t, c.Text)
		assert.Nil(t, c.Usage)
	}
	// Input counts cache reads; output is message_delta's cumulative count.
	assert.Equal(t, agentloop.Chunk{Usage: &session.Usage{Input: 24, Output: 17}, Finish: "stop"}, chunks[14])
	assert.Equal(t, "The capital of France is Paris. It’s known for the Eiffel Tower.", providertest.Assemble(chunks).Text)
}

func TestStreamIndexesToolCallsByOrdinalNotBlock(t *testing.T) {
	chunks, err := stream(t, "tool_use")
	require.NoError(t, err)

	got := providertest.Assemble(chunks)
	assert.Equal(t, "I'll check the weather and the time.", got.Text)
	// Blocks 1 and 2 of the reply are calls 0 and 1.
	assert.Equal(t, []session.ToolCall{
		{ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather", Arguments: `{"city": "Paris", "unit": "c"}`},
		{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_time", Arguments: `{"tz": "Europe/Paris"}`},
	}, got.ToolCalls)
	assert.Equal(t, "tool_calls", got.Finish)
	assert.Equal(t, &session.Usage{Input: 612, Output: 104}, got.Usage)

	var firsts []session.ChunkToolCall
	for _, c := range chunks {
		if c.ToolCall != nil && c.ToolCall.ID != "" {
			firsts = append(firsts, *c.ToolCall)
		}
	}
	assert.Equal(t, []session.ChunkToolCall{
		{Index: 0, ID: "toolu_01T1x1fJ34qAmk2tNTrN7Up6", Name: "get_weather"},
		{Index: 1, ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_time"},
	}, firsts, "id and name come first, without arguments")
	for _, c := range chunks {
		if c.ToolCall != nil {
			assert.False(t, c.ToolCall.ID == "" && c.ToolCall.Arguments == "", "empty fragment %+v", c.ToolCall)
		}
	}
}

// TestStreamCallsThatShareAnIDStayApart: blocks, not ids, make calls; the
// loop makes repeated ids unique.
func TestStreamCallsThatShareAnIDStayApart(t *testing.T) {
	chunks, err := stream(t, "shared_tool_id")
	require.NoError(t, err)
	got := providertest.Assemble(chunks)
	assert.Equal(t, []session.ToolCall{
		{ID: "toolu_0", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		{ID: "toolu_0", Name: "get_time", Arguments: `{"tz":"Europe/Paris"}`},
	}, got.ToolCalls)
	assert.Equal(t, "tool_calls", got.Finish)
}

func TestStreamCallWithoutArgumentsGetsEmptyObject(t *testing.T) {
	chunks, err := stream(t, "tool_no_args")
	require.NoError(t, err)
	got := providertest.Assemble(chunks)
	assert.Equal(t, []session.ToolCall{{ID: "toolu_01NoArgsPing", Name: "ping", Arguments: "{}"}}, got.ToolCalls)
	assert.Equal(t, "tool_calls", got.Finish)
}

func TestStreamYieldsThinkingAsReasoning(t *testing.T) {
	chunks, err := stream(t, "thinking")
	require.NoError(t, err)
	got := providertest.Assemble(chunks)
	assert.Equal(t, "The user asks 9.11 vs 9.9. Compare decimals: 0.90 > 0.11.", got.Reasoning)
	assert.Equal(t, "9.9 is larger.", got.Text)
	assert.Equal(t, &session.Usage{Input: 48, Output: 61}, got.Usage)
	for _, c := range chunks {
		assert.NotContains(t, c.Reasoning, "EqQB", "signatures are not reasoning")
	}
}

func TestStreamMapsMaxTokensToLength(t *testing.T) {
	chunks, err := stream(t, "max_tokens")
	require.NoError(t, err)
	assert.Equal(t, "length", providertest.Assemble(chunks).Finish)
}

func TestStreamErrors(t *testing.T) {
	tests := []struct {
		name      string
		fixture   string
		text      string // delivered before the error
		malformed bool
		status    int
		retryable bool
		message   string
	}{
		{name: "bad JSON mid-stream", fixture: "malformed", text: "Hel", malformed: true},
		{name: "delta for a block that never started", fixture: "unknown_block", text: "ok", malformed: true, message: "unknown content block 3"},
		{name: "cut before message_stop", fixture: "truncated", text: "Once upon a", malformed: true, message: "before message_stop"},
		{name: "overloaded after text", fixture: "error_event", text: "Partial", status: 529, message: "Overloaded"},
		{name: "overloaded before any content", fixture: "overloaded_early", status: 529, retryable: true, message: "Overloaded"},
		{name: "tool_use without a name", fixture: "nameless_tool_use", malformed: true, retryable: true, message: "tool_use block 0 has no name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, err := stream(t, tt.fixture)
			require.Error(t, err)
			var pe *agentloop.ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, "anthropic", pe.Provider)
			assert.Equal(t, tt.status, pe.Status)
			assert.Equal(t, tt.retryable, pe.Retryable)
			if tt.malformed {
				assert.ErrorIs(t, err, ErrMalformedStream)
			}
			assert.Contains(t, err.Error(), tt.message)
			assert.Equal(t, tt.text, providertest.Assemble(chunks).Text, "the delivered prefix is kept")
		})
	}
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
	srv.WaitHandled(1, 5*time.Second)
}

func TestStreamCanBeRangedOnce(t *testing.T) {
	srv := providertest.NewServer(t, sse(t, "text"))
	s, err := newProvider(t, srv).Stream(context.Background(), simpleRequest())
	require.NoError(t, err)
	_, err = providertest.Collect(s)
	require.NoError(t, err)
	_, err = providertest.Collect(s)
	assert.ErrorIs(t, err, ErrStreamReused)
}
