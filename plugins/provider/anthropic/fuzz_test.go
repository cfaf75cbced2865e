package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
)

// FuzzDecoder feeds arbitrary event sequences to the decoder: it must
// never panic; tool-call fragments must name calls in the order they
// started, so the loop can assemble calls by index; and a reply that ends
// without an error has a name for every call and a call for every
// tool_use block (blocks, not ids, make calls).
func FuzzDecoder(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		var data [][]byte
		for _, line := range bytes.Split(b, []byte("\n")) {
			if d, ok := bytes.CutPrefix(line, []byte("data: ")); ok {
				data = append(data, d)
			}
		}
		f.Add(bytes.Join(data, []byte("\n")))
	}
	f.Add([]byte(`{"type":"message_start","message":{}}` + "\n" +
		`{"type":"content_block_start","index":-1,"content_block":{"type":"tool_use","id":"x","name":"n","input":{"a":1}}}` + "\n" +
		`{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"t"}}`))
	f.Add([]byte(`{"type":"message_start","message":{}}` + "\n" +
		`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use"}}` + "\n" +
		`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"x","name":"a"}}` + "\n" +
		`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"x","name":"b"}}` + "\n" +
		`{"type":"message_delta","delta":{"stop_reason":"tool_use"}}` + "\n" +
		`{"type":"message_stop"}`))

	f.Fuzz(func(t *testing.T, stream []byte) {
		var d decoder
		var all []agentloop.Chunk
		seen, blocks := 0, 0
		for _, line := range bytes.Split(stream, []byte("\n")) {
			var ev event
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			chunks, err := d.decode(&ev)
			if err != nil {
				return
			}
			if ev.Type == "content_block_start" && ev.ContentBlock.V.Type == "tool_use" {
				blocks++
			}
			for _, c := range chunks {
				check(t, c, &seen)
			}
			all = append(all, chunks...)
		}
		final, err := d.end()
		if err != nil {
			return
		}
		if final.Finish == "" {
			t.Fatal("final chunk without a finish reason")
		}
		calls := providertest.Assemble(all).ToolCalls
		for i, c := range calls {
			if c.Name == "" {
				t.Fatalf("call %d has no name and the reply no error: %+v", i, c)
			}
		}
		if len(calls) != blocks {
			t.Fatalf("%d tool_use blocks became %d calls", blocks, len(calls))
		}
	})
}

func check(t *testing.T, c agentloop.Chunk, seen *int) {
	if c.ToolCall == nil {
		return
	}
	if c.ToolCall.Index < 0 || c.ToolCall.Index > *seen {
		t.Fatalf("fragment for call %d after %d calls", c.ToolCall.Index, *seen)
	}
	if c.ToolCall.Index == *seen {
		*seen++
	}
}
