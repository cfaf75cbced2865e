// Command effecttool is the plugin of the crash trials: its one tool,
// effect, has a side effect a test can see. It appends the call's tag (a
// line) to the file its config names, and answers "done TAG".
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/vigil-run/vigil/plugins/external/sdk"
)

// Config names the file the effects are appended to.
type Config struct {
	File string `json:"file"`
}

func main() {
	var file string
	sdk.Serve(&sdk.Plugin[Config]{
		Name:    "effecttool",
		Version: "0.1",
		Configure: func(_ context.Context, _ *sdk.Host, cfg Config) error {
			file = cfg.File
			return nil
		},
		Tools: []sdk.Tool{
			sdk.NewTool("effect", "appends its tag to the effects file", []byte(`{"type":"object","properties":{"tag":{"type":"string"}},"required":["tag"]}`),
				func(_ context.Context, a struct {
					Tag string `json:"tag"`
				}) (string, error) {
					f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
					if err != nil {
						return "", err
					}
					defer f.Close()
					if _, err := fmt.Fprintln(f, a.Tag); err != nil {
						return "", err
					}
					return "done " + a.Tag, nil
				}),
		},
	})
}
