package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/internal/providertest"
)

// FuzzDecoder feeds arbitrary chunk sequences to the decoder: it must
// never panic; every tool-call fragment must name a call it has
// numbered, so the loop can assemble calls by index; and a reply that
// ends without an error has a name for every call and a call for every
// server index that carried anything (an index wins over an id, so calls
// that share an id stay apart).
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
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":-7,"function":{"arguments":"x"}},{"id":"a"},{"index":99}]}}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"reasoning_content":5,"reasoning":"r"}}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{}]},"finish_reason":"tool_calls"}]}`))
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","function":{"name":"a"}},{"index":1,"id":"c","function":{"name":"b"}}]},"finish_reason":"stop"}]}`))

	f.Fuzz(func(t *testing.T, stream []byte) {
		var d decoder
		var all []agentloop.Chunk
		seen := 0
		indices := map[int64]bool{} // server indices of fragments that carried something
		check := func(chunks []agentloop.Chunk) {
			for _, c := range chunks {
				if c.ToolCall == nil {
					continue
				}
				if c.ToolCall.Index < 0 || c.ToolCall.Index > seen {
					t.Fatalf("fragment for call %d after %d calls", c.ToolCall.Index, seen)
				}
				if c.ToolCall.Index == seen {
					seen++
				}
			}
			all = append(all, chunks...)
		}
		for _, line := range bytes.Split(stream, []byte("\n")) {
			var c chunk
			if json.Unmarshal(line, &c) != nil {
				continue
			}
			chunks, err := d.decode(&c)
			if err != nil {
				return
			}
			check(chunks)
			choices, _ := c.choices()
			for _, ch := range choices {
				for _, tc := range ch.Delta.V.ToolCalls {
					if ch.Index.Value == 0 && tc.Index.Set && (tc.ID != "" || tc.Function.V.Name != "" || tc.Function.V.Arguments != "") {
						indices[tc.Index.Value] = true
					}
				}
			}
		}
		chunks, err := d.end()
		if err != nil {
			return
		}
		check(chunks)
		if last := chunks[len(chunks)-1]; last.Finish == "" {
			t.Fatal("final chunk without a finish reason")
		}
		calls := providertest.Assemble(all).ToolCalls
		for i, c := range calls {
			if c.Name == "" {
				t.Fatalf("call %d has no name and the reply no error: %+v", i, c)
			}
		}
		if len(calls) < len(indices) {
			t.Fatalf("%d server indices became %d calls", len(indices), len(calls))
		}
	})
}
