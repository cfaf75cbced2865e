//go:build unix

// Command effecttool is the plugin of the crash trials: its one tool,
// effect, has a side effect a test can see. It appends the call's tag (a
// line) to the file its config names, and answers "done TAG". With
// kill_after N, the N-th effect in the file is followed at once by a
// SIGKILL of the plugin's host, the vigil process: the crash lands right
// after the side effect, before the host hears of it.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/vigil-run/vigil/plugins/external/sdk"
)

// Config names the file the effects are appended to.
type Config struct {
	File      string `json:"file"`
	KillAfter int    `json:"kill_after"`
}

func main() {
	var cfg Config
	sdk.Serve(&sdk.Plugin[Config]{
		Name:    "effecttool",
		Version: "0.1",
		Configure: func(_ context.Context, _ *sdk.Host, c Config) error {
			cfg = c
			return nil
		},
		Tools: []sdk.Tool{
			sdk.NewTool("effect", "appends its tag to the effects file", []byte(`{"type":"object","properties":{"tag":{"type":"string"}},"required":["tag"]}`),
				func(_ context.Context, a struct {
					Tag string `json:"tag"`
				}) (string, error) {
					f, err := os.OpenFile(cfg.File, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
					if err != nil {
						return "", err
					}
					_, err = fmt.Fprintln(f, a.Tag)
					if err := errors.Join(err, f.Close()); err != nil {
						return "", err
					}
					if b, _ := os.ReadFile(cfg.File); cfg.KillAfter > 0 && bytes.Count(b, []byte("\n")) >= cfg.KillAfter {
						_ = syscall.Kill(os.Getppid(), syscall.SIGKILL)
					}
					return "done " + a.Tag, nil
				}),
		},
	})
}
