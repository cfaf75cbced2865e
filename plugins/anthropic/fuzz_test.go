package anthropic

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"

	"github.com/vigil-run/vigil/agentloop"
)

// FuzzDecoder feeds arbitrary event sequences to the decoder: it must
// never panic, and tool-call fragments must name calls in the order they
// started, so the loop can assemble calls by index.
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

	f.Fuzz(func(t *testing.T, stream []byte) {
		var d decoder
		seen := 0
		for _, line := range bytes.Split(stream, []byte("\n")) {
			var ev sdk.MessageStreamEventUnion
			if json.Unmarshal(line, &ev) != nil {
				continue
			}
			chunks, err := d.decode(ev)
			if err != nil {
				return
			}
			for _, c := range chunks {
				check(t, c, &seen)
			}
		}
		if final, err := d.end(); err == nil && final.Finish == "" {
			t.Fatal("final chunk without a finish reason")
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
