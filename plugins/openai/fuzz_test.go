package openai

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	oai "github.com/openai/openai-go/v3"

	"github.com/vigil-run/vigil/agentloop"
)

// FuzzDecoder feeds arbitrary chunk sequences to the decoder: it must
// never panic, and every tool-call fragment must name a call it has
// numbered, so the loop can assemble calls by index.
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

	f.Fuzz(func(t *testing.T, stream []byte) {
		var d decoder
		seen := 0
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
		}
		for _, line := range bytes.Split(stream, []byte("\n")) {
			var c oai.ChatCompletionChunk
			if json.Unmarshal(line, &c) != nil {
				continue
			}
			chunks, err := d.decode(c)
			if err != nil {
				return
			}
			check(chunks)
		}
		chunks, err := d.end()
		if err == nil {
			check(chunks)
			if last := chunks[len(chunks)-1]; last.Finish == "" {
				t.Fatal("final chunk without a finish reason")
			}
		}
	})
}
