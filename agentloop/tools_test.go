package agentloop_test

import (
	"context"
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/session"
)

func TestToolFailuresBecomeErrorResults(t *testing.T) {
	echo := funcTool{name: "echo", fn: func(_ context.Context, args json.RawMessage) (string, error) { return string(args), nil }}
	failing := funcTool{name: "failing", fn: func(context.Context, json.RawMessage) (string, error) { return "", errBoom }}
	coded := funcTool{name: "coded", fn: func(context.Context, json.RawMessage) (string, error) {
		return "", &agentloop.ToolError{Code: "QUOTA", Message: "no more"}
	}}
	panicking := funcTool{name: "panicking", fn: func(context.Context, json.RawMessage) (string, error) { panic("tool bug") }}
	cases := []struct {
		name      string
		call      scripted.ToolCall
		content   string
		code      string
		projected string // what the model sees
	}{
		{"invalid JSON", scripted.ToolCall{Name: "echo", Arguments: `{"a":`}, "", agentloop.CodeInvalidArguments, "error INVALID_ARGUMENTS: arguments must be a JSON object: unexpected end of JSON input"},
		{"not an object", scripted.ToolCall{Name: "echo", Arguments: `[1,2]`}, "", agentloop.CodeInvalidArguments, ""},
		{"null", scripted.ToolCall{Name: "echo", Arguments: `null`}, "", agentloop.CodeInvalidArguments, ""},
		{"empty means {}", scripted.ToolCall{Name: "echo", Arguments: ``}, "{}", "", "{}"},
		{"unknown tool", scripted.ToolCall{Name: "nope"}, "", agentloop.CodeUnknownTool, `error UNKNOWN_TOOL: no tool named "nope"`},
		{"tool error", scripted.ToolCall{Name: "failing"}, "", agentloop.CodeToolFailed, "error TOOL_ERROR: boom"},
		{"coded tool error", scripted.ToolCall{Name: "coded"}, "", "QUOTA", "error QUOTA: no more"},
		{"panic", scripted.ToolCall{Name: "panicking"}, "", agentloop.CodeToolPanic, "error TOOL_PANIC: tool bug"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			prov := script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{tc.call}}, scripted.Reply{Text: "noted"})
			a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(prov), agentloop.WithTools(echo, failing, coded, panicking))
			sess := e.session()
			res, err := a.Run(context.Background(), sess, "call it")
			require.NoError(t, err)
			assert.Equal(t, session.ReasonCompleted, res.Reason)
			assert.Equal(t, "noted", res.Content)
			results := ofType(sess.Records(), session.TypeToolResult)
			require.Len(t, results, 1)
			r := decode[session.ToolResult](t, results[0])
			assert.Equal(t, tc.content, r.Content)
			if tc.code == "" {
				assert.Nil(t, r.Error)
			} else {
				require.NotNil(t, r.Error)
				assert.Equal(t, tc.code, r.Error.Code)
			}
			if tc.projected != "" {
				msgs := sess.Messages()
				assert.Equal(t, tc.projected, msgs[2].Content)
			}
		})
	}
}

func TestConcurrencySafeToolsRunTogetherAndLogInCallOrder(t *testing.T) {
	e := newEnv(t)
	// Each safe call waits until both have started: run one at a time,
	// they would time out.
	var wg sync.WaitGroup
	wg.Add(2)
	barrier := func(name string, delay time.Duration) funcTool {
		return funcTool{name: name, safe: true, fn: func(ctx context.Context, _ json.RawMessage) (string, error) {
			wg.Done()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				return "", errBoom
			}
			time.Sleep(delay) // the first call finishes last
			return name + " done", nil
		}}
	}
	var inUnsafe, overlap atomic.Int32
	unsafe := funcTool{name: "unsafe", fn: func(context.Context, json.RawMessage) (string, error) {
		if inUnsafe.Add(1) > 1 {
			overlap.Add(1)
		}
		time.Sleep(5 * time.Millisecond)
		inUnsafe.Add(-1)
		return "u", nil
	}}
	prov := script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "a"}, {Name: "b"}, {Name: "unsafe"}, {Name: "unsafe"}}}, scripted.Reply{Text: "done"})
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(prov), agentloop.WithTools(barrier("a", 20*time.Millisecond), barrier("b", 0), unsafe))
	sess := e.session()
	_, err := a.Run(context.Background(), sess, "go")
	require.NoError(t, err)
	assert.Zero(t, overlap.Load())

	var got []string
	for _, r := range sess.Records() {
		if r.Step() != 1 {
			continue
		}
		switch r.Type() {
		case session.TypeToolCall:
			got = append(got, "call "+decode[session.ToolCall](t, r).Name)
		case session.TypeToolResult:
			got = append(got, "result "+decode[session.ToolResult](t, r).Content)
		}
	}
	assert.Equal(t, []string{
		"call a", "call b", "result a done", "result b done",
		"call unsafe", "result u", "call unsafe", "result u",
	}, got)
}

func TestToolExecuteListenersSeeAndMayAnswerCalls(t *testing.T) {
	e := newEnv(t)
	var seen []string
	agentloop.ToolExecute.On(e.c, func(ctx context.Context, inv *agentloop.ToolInvocation, next bus.Next[*agentloop.ToolInvocation, agentloop.ToolOutput]) (agentloop.ToolOutput, error) {
		seen = append(seen, inv.Call.Name)
		if inv.Call.Name == "virtual" {
			return agentloop.ToolOutput{Content: "answered by a listener"}, nil
		}
		return next(ctx, inv)
	})
	echo := funcTool{name: "echo", fn: func(_ context.Context, args json.RawMessage) (string, error) { return string(args), nil }}
	prov := script(t, scripted.Reply{ToolCalls: []scripted.ToolCall{{Name: "virtual"}, {Name: "echo", Arguments: map[string]any{"x": 1}}}}, scripted.Reply{Text: "ok"})
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(prov), agentloop.WithTools(echo))
	sess := e.session()
	_, err := a.Run(context.Background(), sess, "go")
	require.NoError(t, err)
	assert.Equal(t, []string{"virtual", "echo"}, seen)
	msgs := sess.Messages()
	assert.Equal(t, "answered by a listener", msgs[2].Content)
	assert.Equal(t, `{"x":1}`, msgs[3].Content)
}
