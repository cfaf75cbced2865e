package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// chatMessage is a message of a chat-completions request, as the test
// servers read it.
type chatMessage struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// chatServer is an OpenAI-compatible chat-completions server that streams
// to each request the choices reply gives for its messages. A request it
// cannot read, or one reply refuses (returns nil for), fails the test
// and is answered 400.
func chatServer(t *testing.T, name string, reply func(msgs []chatMessage) []string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []chatMessage `json:"messages"`
		}
		body, err := io.ReadAll(r.Body)
		if err == nil {
			err = json.Unmarshal(body, &req)
		}
		var choices []string
		if err == nil && r.URL.Path == "/v1/chat/completions" && len(req.Messages) > 0 {
			choices = reply(req.Messages)
		}
		if choices == nil {
			t.Errorf("%s: %s %s: %s: %v", name, r.Method, r.URL.Path, body, err)
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		streamChoices(w, choices)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// textChoices is an answer of text s.
func textChoices(s string) []string {
	q, _ := json.Marshal(s)
	return []string{
		`{"index":0,"delta":{"role":"assistant","content":` + string(q) + `},"finish_reason":null}`,
		`{"index":0,"delta":{},"finish_reason":"stop"}`,
	}
}

// callChoices is a reply that calls tool name with args (JSON) as id.
func callChoices(id, name, args string) []string {
	q, _ := json.Marshal(args)
	return []string{
		`{"index":0,"delta":{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"` + id + `","type":"function","function":{"name":"` + name + `","arguments":` + string(q) + `}}]},"finish_reason":null}`,
		`{"index":0,"delta":{},"finish_reason":"tool_calls"}`,
	}
}
