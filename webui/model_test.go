package webui_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
)

// model is a model server speaking OpenAI's streaming chat completions
// wire format, which provider/openai (the official SDK) reads. What it
// answers depends on the request, so that the test's turns are what a
// real model's would be:
//   - a system message "You research." (the sub-agent): a text answer;
//   - a last message from a tool: "The tool said: …" with its content;
//   - a user message with "delegate": a call of the research tool;
//   - one with "compute": a calc call (the policy asks before it runs);
//   - one with "slow": "Thinking" and then, once the test opens the gate,
//     the rest of the answer;
//   - anything else: a short text, in several chunks.
//
// Each reply ends with a usage chunk, as OpenAI sends with include_usage.
type model struct {
	gate chan struct{}
	once sync.Once
}

func (m *model) open() { m.once.Do(func() { close(m.gate) }) }

func newModel(t *testing.T) (*model, *httptest.Server) {
	m := &model{gate: make(chan struct{})}
	srv := httptest.NewServer(http.HandlerFunc(m.serve))
	t.Cleanup(srv.Close)
	t.Cleanup(m.open)
	return m, srv
}

type wireMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

func (w wireMessage) text() string {
	switch c := w.Content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if part, ok := p.(map[string]any); ok {
				fmt.Fprint(&b, part["text"])
			}
		}
		return b.String()
	}
	return ""
}

func (m *model) serve(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Messages []wireMessage `json:"messages"`
		Tools    []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || len(req.Messages) == 0 {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	var tools []string
	for _, t := range req.Tools {
		tools = append(tools, t.Function.Name)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(c string) {
		fmt.Fprintf(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1764450084,"model":"m","choices":[%s]}`+"\n\n", c)
		w.(http.Flusher).Flush()
	}
	text := func(s string) {
		q, _ := json.Marshal(s)
		chunk(`{"index":0,"delta":{"role":"assistant","content":` + string(q) + `},"finish_reason":null}`)
	}
	call := func(name, args string) {
		q, _ := json.Marshal(args)
		chunk(`{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"` + name + `","arguments":` + string(q) + `}}]},"finish_reason":null}`)
		chunk(`{"index":0,"delta":{},"finish_reason":"tool_calls"}`)
	}
	stop := func() { chunk(`{"index":0,"delta":{},"finish_reason":"stop"}`) }
	last := req.Messages[len(req.Messages)-1]
	switch user := last.text(); {
	case req.Messages[0].Role == "system" && req.Messages[0].text() == "You research.":
		text("The answer is ")
		text("42.")
		stop()
	case last.Role == "tool":
		text("The tool said: " + user)
		stop()
	case strings.Contains(user, "delegate") && slices.Contains(tools, "research"):
		text("I will ask the researcher.")
		call("research", `{"task":"Find the answer."}`)
	case strings.Contains(user, "compute"):
		text("Let me compute.")
		call("calc", `{"expression":"6*7"}`)
	case strings.Contains(user, "slow"):
		text("Thinking")
		<-m.gate
		text(" done: hello.")
		stop()
	default:
		text("Hello")
		text(" from the model.")
		stop()
	}
	fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1764450084,"model":"m","choices":[],"usage":{"prompt_tokens":120,"completion_tokens":15,"total_tokens":135}}`+"\n\n")
	fmt.Fprint(w, "data: [DONE]\n\n")
}
