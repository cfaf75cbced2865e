package scripted_test

import (
	"context"
	"errors"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

func collect(s agentloop.Stream, err error) ([]agentloop.Chunk, error) {
	if err != nil {
		return nil, err
	}
	var out []agentloop.Chunk
	for c, err := range s {
		if err != nil {
			return out, err
		}
		out = append(out, c)
	}
	return out, nil
}

func text(chunks []agentloop.Chunk) (txt string, n int) {
	for _, c := range chunks {
		if c.Text != "" {
			txt += c.Text
			n++
		}
	}
	return txt, n
}

// request is a request of turn 2, step 1. (Only the loop builds marked
// requests; the default script's loop path is tested through the loop in
// package agentloop. Scripted replies ignore the mark.)
func request(t *testing.T, msgs ...session.Message) *agentloop.Request {
	t.Helper()
	return &agentloop.Request{Turn: 2, Step: 1, Messages: session.NewMessages(msgs)}
}

func TestScriptStreamsRepliesInSeveralChunks(t *testing.T) {
	p, err := scripted.New(scripted.Config{Script: []scripted.Reply{
		{Reasoning: "think first", Text: "Hello there, world.", ToolCalls: []scripted.ToolCall{
			{Name: "calc", Arguments: map[string]any{"expression": "1+2"}},
			{Name: "raw", Arguments: `{"a":`},
		}},
	}})
	require.NoError(t, err)
	chunks, err := collect(p.Stream(context.Background(), request(t, session.Message{Role: "user", Content: "hi"})))
	require.NoError(t, err)
	txt, n := text(chunks)
	assert.Equal(t, "Hello there, world.", txt)
	assert.Equal(t, 3, n)
	assert.Equal(t, "think ", chunks[0].Reasoning)

	var calls []session.ChunkToolCall
	for _, c := range chunks {
		if c.ToolCall != nil {
			calls = append(calls, *c.ToolCall)
		}
	}
	require.Len(t, calls, 4)
	assert.Equal(t, "call_2_1_0", calls[0].ID)
	assert.Equal(t, "calc", calls[0].Name)
	assert.Equal(t, `{"expression":"1+2"}`, calls[0].Arguments+calls[1].Arguments)
	assert.Empty(t, calls[1].ID)
	assert.Equal(t, `{"a":`, calls[2].Arguments+calls[3].Arguments)

	last := chunks[len(chunks)-1]
	assert.Equal(t, session.FinishToolCalls, last.Finish)
	require.NotNil(t, last.Usage)
	assert.Positive(t, last.Usage.Output)
	assert.Equal(t, 1, p.Calls())
	assert.Zero(t, p.Remaining())

	_, err = p.Stream(context.Background(), request(t))
	assert.ErrorIs(t, err, scripted.ErrScriptExhausted)
}

// TestArgumentsAreSplitBetweenCharacters: a call's arguments come in two
// fragments, never cutting a character in two.
func TestArgumentsAreSplitBetweenCharacters(t *testing.T) {
	for _, args := range []string{`{"p":"ééé"}`, `{"p":"😀😀"}`, `é`, `{}`} {
		p, err := scripted.New(scripted.Config{Script: []scripted.Reply{{ToolCalls: []scripted.ToolCall{{Name: "x", Arguments: args}}}}})
		require.NoError(t, err)
		chunks, err := collect(p.Stream(context.Background(), request(t)))
		require.NoError(t, err)
		joined := ""
		for _, c := range chunks {
			if c.ToolCall != nil {
				assert.True(t, utf8.ValidString(c.ToolCall.Arguments), "%q", c.ToolCall.Arguments)
				joined += c.ToolCall.Arguments
			}
		}
		assert.Equal(t, args, joined)
	}
}

func TestScriptRepeats(t *testing.T) {
	p, err := scripted.New(scripted.Config{Repeat: true, Script: []scripted.Reply{{Text: "a"}, {Text: "b"}}})
	require.NoError(t, err)
	var got string
	for range 5 {
		chunks, err := collect(p.Stream(context.Background(), request(t)))
		require.NoError(t, err)
		txt, _ := text(chunks)
		got += txt
	}
	assert.Equal(t, "ababa", got)
}

func TestScriptedFailures(t *testing.T) {
	cases := []struct {
		name      string
		failure   scripted.Failure
		retryable bool
		delivered string
	}{
		{"429 before any chunk", scripted.Failure{Status: 429}, true, ""},
		{"503", scripted.Failure{Status: 503, Message: "overloaded"}, true, ""},
		{"400", scripted.Failure{Status: 400}, false, ""},
		{"after two chunks", scripted.Failure{Status: 500, After: 2}, true, "one two "},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.failure
			p, err := scripted.New(scripted.Config{Script: []scripted.Reply{{Text: "one two three", Error: &f}}})
			require.NoError(t, err)
			chunks, err := collect(p.Stream(context.Background(), request(t)))
			var pe *agentloop.ProviderError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tc.retryable, pe.Retryable)
			assert.Equal(t, tc.failure.Status, pe.Status)
			txt, _ := text(chunks)
			assert.Equal(t, tc.delivered, txt)
		})
	}
}

func TestStreamStopsOnCancel(t *testing.T) {
	p, err := scripted.New(scripted.Config{Script: []scripted.Reply{{Text: "a b c d"}}})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s, err := p.Stream(ctx, request(t))
	require.NoError(t, err)
	var got []string
	var end error
	for c, err := range s {
		if err != nil {
			end = err
			break
		}
		got = append(got, c.Text)
		cancel()
	}
	assert.Equal(t, []string{"a "}, got)
	assert.ErrorIs(t, end, context.Canceled)
}

func TestDefaultScriptAnswersOneShotsWithTheGist(t *testing.T) {
	p, err := scripted.New(scripted.Config{})
	require.NoError(t, err)
	chunks, err := collect(p.Stream(context.Background(), &agentloop.Request{Messages: session.NewMessages([]session.Message{
		{Role: "user", Content: "list   the\nfolder"},
		{Role: "assistant", ToolCalls: []session.ToolCall{{ID: "c", Name: "list_dir", Arguments: `{"path":"."}`}}},
		{Role: "tool", ToolCallID: "c", Name: "list_dir", Content: "a.txt"},
		{Role: "user", Content: "Summarize the conversation above."},
	})}))
	require.NoError(t, err)
	txt, _ := text(chunks)
	assert.Equal(t, `In short: [user] list the folder [assistant] list_dir {"path":"."} [tool] a.txt`, txt)

	chunks, err = collect(p.Stream(context.Background(), &agentloop.Request{Messages: session.NewMessages([]session.Message{{Role: "user", Content: "A title."}})}))
	require.NoError(t, err)
	txt, _ = text(chunks)
	assert.Equal(t, "Nothing to summarize.", txt)
}

func TestConfigValidate(t *testing.T) {
	cases := []struct {
		name string
		cfg  scripted.Config
		ok   bool
	}{
		{"default", scripted.Config{}, true},
		{"text", scripted.Config{Script: []scripted.Reply{{Text: "x"}}}, true},
		{"empty reply", scripted.Config{Script: []scripted.Reply{{}}}, false},
		{"nameless call", scripted.Config{Script: []scripted.Reply{{ToolCalls: []scripted.ToolCall{{}}}}}, false},
		{"unencodable args", scripted.Config{Script: []scripted.Reply{{ToolCalls: []scripted.ToolCall{{Name: "x", Arguments: map[string]any{"f": func() {}}}}}}}, false},
		{"yaml v2 style map", scripted.Config{Script: []scripted.Reply{{ToolCalls: []scripted.ToolCall{{Name: "x", Arguments: map[any]any{"k": []any{map[any]any{1: "v"}}}}}}}}, true},
		{"negative after", scripted.Config{Script: []scripted.Reply{{Error: &scripted.Failure{After: -1}}}}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			assert.Equal(t, tc.ok, err == nil, "%v", err)
			_, err = scripted.New(tc.cfg)
			assert.Equal(t, tc.ok, err == nil, "%v", err)
		})
	}
}

func TestPluginProvidesTheProvider(t *testing.T) {
	r := bus.New()
	defer r.Dispose()
	m, ok := bus.LookupModule(scripted.Name)
	require.True(t, ok)
	f, err := r.Context().Plugin(m.New(), m.Config())
	require.NoError(t, err)
	p, err := agentloop.ProviderService.Get(r.Context())
	require.NoError(t, err)
	n, ok := p.(agentloop.Namer)
	require.True(t, ok)
	assert.Equal(t, "scripted", n.Name())
	require.NoError(t, f.Dispose())

	_, err = r.Context().Plugin(m.New(), &scripted.Config{Script: []scripted.Reply{{}}})
	require.Error(t, err)
	assert.False(t, errors.Is(err, bus.ErrServiceMissing))
}
