package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/openai"
	"github.com/vigil-run/vigil/session"
)

// A stand-in for an OpenAI-compatible server, so the example runs offline.
func fakeServer() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"1","object":"chat.completion.chunk","created":1,"model":"llama3.2","choices":[{"index":0,"delta":{"role":"assistant","content":"Hello"},"finish_reason":null}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"1","object":"chat.completion.chunk","created":1,"model":"llama3.2","choices":[{"index":0,"delta":{"content":", world"},"finish_reason":"stop"}]}`+"\n\n")
		fmt.Fprint(w, `data: {"id":"1","object":"chat.completion.chunk","created":1,"model":"llama3.2","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":3,"total_tokens":12}}`+"\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	}))
}

// Construct a provider for a local Ollama-style server (no API key) and
// stream one reply.
func ExampleNew() {
	srv := fakeServer()
	defer srv.Close()

	p, err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", Model: "llama3.2"})
	if err != nil {
		fmt.Println(err)
		return
	}
	stream, err := p.Stream(context.Background(), &agentloop.Request{
		Messages: session.NewMessages([]session.Message{{Role: session.RoleUser, Content: "Say hello."}}),
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for chunk, err := range stream {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(chunk.Text)
		if chunk.Finish != "" {
			fmt.Printf("\n[%s, %d+%d tokens]\n", chunk.Finish, chunk.Usage.Input, chunk.Usage.Output)
		}
	}
	// Output:
	// Hello, world
	// [stop, 9+3 tokens]
}

// The plugin is registered by name; applying it with a config provides
// the agent loop's provider service.
func ExamplePlugin() {
	root := bus.New()
	defer root.Dispose()

	m, _ := bus.LookupModule("provider/openai")
	_, err := root.Context().Plugin(m.New(), &openai.Config{
		BaseURL: "http://localhost:11434/v1", // Ollama; no key needed
		Model:   "llama3.2",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := agentloop.ProviderService.Get(root.Context())
	fmt.Println(p.(agentloop.Namer).Name(), err)

	_, err = root.Context().Plugin(m.New(), &openai.Config{BaseURL: "http://localhost:11434/v1"})
	fmt.Println(err)
	// Output:
	// openai <nil>
	// plugin "provider/openai": validate: invalid config: model is required (for example gpt-4o-mini)
}
