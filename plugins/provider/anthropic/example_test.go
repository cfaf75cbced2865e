package anthropic_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/anthropic"
	"github.com/vigil-run/vigil/session"
)

// A stand-in for the Messages API, so the example runs offline.
func fakeServer() *httptest.Server {
	events := []string{
		`event: message_start` + "\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"usage":{"input_tokens":9,"output_tokens":1}}}`,
		`event: content_block_start` + "\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}`,
		`event: content_block_delta` + "\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":", world"}}`,
		`event: content_block_stop` + "\n" + `data: {"type":"content_block_stop","index":0}`,
		`event: message_delta` + "\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":3}}`,
		`event: message_stop` + "\n" + `data: {"type":"message_stop"}`,
	}
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, e := range events {
			fmt.Fprint(w, e+"\n\n")
		}
	}))
}

// Construct a provider and stream one reply.
func ExampleNew() {
	srv := fakeServer()
	defer srv.Close()

	p, err := anthropic.New(anthropic.Config{
		BaseURL: srv.URL, // empty for api.anthropic.com
		APIKey:  "sk-ant-example",
		Model:   "claude-sonnet-4-5",
	})
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

	m, _ := bus.LookupModule("provider/anthropic")
	_, err := root.Context().Plugin(m.New(), &anthropic.Config{
		APIKey:    "sk-ant-example", // ${ANTHROPIC_API_KEY} in plugins.yaml
		Model:     "claude-sonnet-4-5",
		MaxTokens: 4096,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := agentloop.ProviderService.Get(root.Context())
	fmt.Println(p.(agentloop.Namer).Name(), err)
	// Output:
	// anthropic <nil>
}
