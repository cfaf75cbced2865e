//go:build unix

// Command effecttool is the plugin of the crash trials: its one tool,
// effect, has a side effect a test can see. It appends the call's tag (a
// line) to the file its config names, and answers "done TAG". With
// kill_after N, the N-th effect in the file is followed at once by a
// SIGKILL of the plugin's host, the vigil process: the crash lands right
// after the side effect, before the host hears of it.
//
// Its second tool, keyed_effect, is declared idempotent: it appends "TAG
// KEY" (KEY the call's idempotency key) only when no line has that key
// yet, so running a call again has its effect once, and appends every
// run's key to the file FILE.runs.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/vigil-run/vigil/plugins/external/sdk"
)

// Config names the file the effects are appended to. KillBefore N kills
// the host right before the N-th effect (counted in the file, as
// KillAfter), once the tool runs; DelayMS makes every run wait that long
// before its effect, so a kill from outside can land during a tool.
type Config struct {
	File       string `json:"file"`
	KillAfter  int    `json:"kill_after"`
	KillBefore int    `json:"kill_before"`
	DelayMS    int    `json:"delay_ms"`
}

var cfg Config

// killAfterEffect kills the host once the effects file has KillAfter
// lines.
func killAfterEffect() {
	if b, _ := os.ReadFile(cfg.File); cfg.KillAfter > 0 && bytes.Count(b, []byte("\n")) >= cfg.KillAfter {
		_ = syscall.Kill(os.Getppid(), syscall.SIGKILL)
	}
}

// beforeEffect waits DelayMS, then kills the host if the next effect is
// the KillBefore-th.
func beforeEffect() {
	time.Sleep(time.Duration(cfg.DelayMS) * time.Millisecond)
	if b, _ := os.ReadFile(cfg.File); cfg.KillBefore > 0 && bytes.Count(b, []byte("\n")) >= cfg.KillBefore-1 {
		_ = syscall.Kill(os.Getppid(), syscall.SIGKILL)
		// The signal is delivered asynchronously: the effect must not
		// happen while the host is dying.
		os.Exit(3)
	}
}

// keyedEffect is the tool keyed_effect.
func keyedEffect() sdk.Tool {
	t := sdk.NewTool("keyed_effect", "appends its tag to the effects file once per idempotency key", []byte(`{"type":"object","properties":{"tag":{"type":"string"}},"required":["tag"]}`),
		func(ctx context.Context, a struct {
			Tag string `json:"tag"`
		}) (string, error) {
			key := sdk.IdempotencyKey(ctx)
			if err := appendLine(cfg.File+".runs", key); err != nil {
				return "", err
			}
			b, _ := os.ReadFile(cfg.File)
			for l := range strings.Lines(string(b)) {
				if strings.HasSuffix(strings.TrimSuffix(l, "\n"), " "+key) {
					return "done " + a.Tag + " (already)", nil
				}
			}
			beforeEffect()
			if err := appendLine(cfg.File, a.Tag+" "+key); err != nil {
				return "", err
			}
			killAfterEffect()
			return "done " + a.Tag, nil
		})
	t.Idempotent = true
	return t
}

func appendLine(path, line string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, line)
	return errors.Join(err, f.Close())
}

func main() {
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
					beforeEffect()
					if err := appendLine(cfg.File, a.Tag); err != nil {
						return "", err
					}
					killAfterEffect()
					return "done " + a.Tag, nil
				}),
			keyedEffect(),
		},
	})
}
