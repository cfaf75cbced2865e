package vigil_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	_ "github.com/vigil-run/vigil/plugins/store/memory" // store/memory, by name
)

// A composition of Go values (no YAML): an in-memory store, a scripted
// model and the agent. Run streams a turn's chunks; the turn's session is
// continued by id.
func Example() {
	ctx := context.Background()
	rt, err := vigil.Open(ctx, vigil.Compose(
		vigil.Plugin("store/memory", nil),
		vigil.Plugin("provider/scripted", scripted.Config{Script: []scripted.Reply{
			{Text: "Hello! How can I help?"},
			{Text: "You said hi."},
		}}),
		vigil.Plugin("agent", agentloop.Config{System: "Be brief."}),
	))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	id, err := rt.NewSession(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, prompt := range []string{"hi", "what did I say?"} {
		fmt.Print("> ", prompt, "\n")
		for chunk, err := range rt.Run(ctx, id, prompt) {
			if err != nil {
				fmt.Println("error:", err)
				return
			}
			fmt.Print(chunk.Text)
		}
		fmt.Println()
	}
	log, _ := rt.Session(ctx, id)
	fmt.Println(len(log.Records), "records")
	// Output:
	// > hi
	// Hello! How can I help?
	// > what did I say?
	// You said hi.
	// 23 records
}

// Turn runs a turn with a callback for the chunks and returns its result:
// a new session's id, the end reason, the usage.
func ExampleRuntime_Turn() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "vigil-example")
	defer os.RemoveAll(dir)
	yaml := `plugins:
  - name: store/memory
  - name: provider/scripted
    config: { script: [ { text: "Two files." } ] }
  - name: agent
`
	path := filepath.Join(dir, "plugins.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	rt, err := vigil.Open(ctx, vigil.File(path))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	chunks := 0
	res, err := rt.Turn(ctx, vigil.TurnOptions{Prompt: "How many files?", OnChunk: func(agentloop.Chunk) { chunks++ }})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("turn %d %s in %d step(s), %d chunks: %q\n", res.Turn, res.Reason, res.Steps, chunks, res.Content)
	// Output:
	// turn 1 completed in 1 step(s), 2 chunks: "Two files."
}
