package budget_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
	"github.com/vigil-run/vigil/session"
)

func sse(usage string, chunks ...string) providertest.Reply {
	var b strings.Builder
	for _, c := range chunks {
		fmt.Fprintf(&b, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[%s]}`+"\n\n", c)
	}
	fmt.Fprintf(&b, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":%s}`+"\n\n", usage)
	b.WriteString("data: [DONE]\n\n")
	return providertest.Reply{Body: []byte(b.String())}
}

// The cap reaches the wire: each request an OpenAI-compatible server gets
// carries the max_tokens a cost limit leaves at the model's output price,
// as the step's logged header says.
func TestCostCapReachesTheProvider(t *testing.T) {
	srv := providertest.NewServer(t,
		sse(`{"prompt_tokens":30,"completion_tokens":10,"total_tokens":40}`,
			`{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_A","type":"function","function":{"name":"list_dir","arguments":"{\"path\":\".\"}"}}]},"finish_reason":null}`,
			`{"index":0,"delta":{},"finish_reason":"tool_calls"}`),
		sse(`{"prompt_tokens":50,"completion_tokens":5,"total_tokens":55}`,
			`{"index":0,"delta":{"role":"assistant","content":"a.txt"},"finish_reason":null}`,
			`{"index":0,"delta":{},"finish_reason":"stop"}`),
	)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("hi\n"), 0o644))
	yaml := `plugins:
  - name: store/memory
  - name: provider/openai
    config: { base_url: "` + srv.URL + `/v1", api_key: test, model: gpt-4o-mini }
  - name: agent
    config: { model: gpt-4o-mini, max_tokens: 500 }
  - name: tools/fs
    config: { root: ` + dir + ` }
  - name: invariants
  - name: budget
    config:
      turn: { cost: 0.001 }
      prices:
        gpt-4o-mini: { input: 1, output: 10 }
`
	path := filepath.Join(dir, "plugins.yaml")
	require.NoError(t, os.WriteFile(path, []byte(yaml), 0o644))
	rt, err := vigil.Open(context.Background(), vigil.File(path))
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, rt.Close()) })

	res, err := rt.Turn(context.Background(), vigil.TurnOptions{Prompt: "what is here?"})
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)

	// $0.001 buys 100 output tokens at $10 per million; step 1 spent
	// 30×$1 + 10×$10 per million = $0.00013, leaving 87.
	var sent []int
	for _, r := range srv.Requests() {
		var body struct {
			MaxTokens int `json:"max_tokens"`
		}
		require.NoError(t, json.Unmarshal(r.Body, &body))
		sent = append(sent, body.MaxTokens)
	}
	assert.Equal(t, []int{100, 87}, sent)
	var logged []int
	for _, r := range verified(t, rt, res.Session) {
		if r.Type() == session.TypeRequestHeader {
			h, err := session.DecodeData[session.RequestHeader](r)
			require.NoError(t, err)
			logged = append(logged, h.Header.MaxTokens)
		}
	}
	assert.Equal(t, sent, logged)
}
