// Command testplugin is the plugin the external adapter's tests run. Its
// behaviour is chosen by the environment (passed through the env
// allow-list) and its config:
//
//	VIGIL_TEST_MODE=stray    print to stdout before serving
//	VIGIL_TEST_MODE=version  speak protocol version 99
//	VIGIL_TEST_MODE=slowstart  sleep a minute before serving
//	VIGIL_TEST_MARKER=path   create path at start
//	VIGIL_TEST_START_DELAY=d wait d (a Go duration) before serving
//	VIGIL_TEST_TYPES=all     observe and validate every event type
//	                         (default: user/message and tool/call)
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/plugins/external/sdk"
	"github.com/vigil-run/vigil/session"
)

// Config is the test plugin's config.
type Config struct {
	// Veto refuses user/message events whose content matches.
	Veto string `json:"veto"`
	// VetoTools refuses tool/call events whose tool name matches.
	VetoTools string `json:"veto_tools"`
	// AskTools asks a person about tool calls whose tool name matches.
	AskTools string `json:"ask_tools"`
	// AskMessages answers ask for user/message events whose content
	// matches (which the host refuses: a message cannot wait).
	AskMessages string `json:"ask_messages"`
	// SlowValidate makes Validate sleep this long (ms).
	SlowValidate int `json:"slow_validate"`
	// FailConfigure makes Configure fail.
	FailConfigure bool `json:"fail_configure"`
	// LongReason pads every veto's reason with this many bytes.
	LongReason int `json:"long_reason"`
}

type state struct {
	mu sync.Mutex
	// seen are the events observed; validated those validated.
	seen, validated []string
	host            *sdk.Host
	veto            *regexp.Regexp
	tools           *regexp.Regexp
	askTools        *regexp.Regexp
	askMessages     *regexp.Regexp
	slow            time.Duration
	pad             string
}

func main() {
	if m := os.Getenv("VIGIL_TEST_MARKER"); m != "" {
		_ = os.WriteFile(m, []byte("started"), 0o644)
	}
	if d, err := time.ParseDuration(os.Getenv("VIGIL_TEST_START_DELAY")); err == nil {
		time.Sleep(d)
	}
	switch os.Getenv("VIGIL_TEST_MODE") {
	case "stray":
		fmt.Println("hello from the plugin")
	case "slowstart":
		time.Sleep(time.Minute)
	case "version":
		hs := sdk.Handshake()
		hs.ProtocolVersion = 99
		plugin.Serve(&plugin.ServeConfig{HandshakeConfig: hs, GRPCServer: plugin.DefaultGRPCServer,
			Plugins: plugin.PluginSet{pluginpb.PluginName: &plugin.NetRPCUnsupportedPlugin{}}})
		return
	}
	st := &state{}
	types := []string{session.TypeUserMessage, session.TypeToolCall}
	if os.Getenv("VIGIL_TEST_TYPES") == "all" {
		types = nil
	}
	sdk.Serve(&sdk.Plugin[Config]{
		Name:    "testplugin",
		Version: "0.1",
		Configure: func(_ context.Context, h *sdk.Host, cfg Config) error {
			if cfg.FailConfigure {
				return errors.New("configure refused")
			}
			st.host = h
			if cfg.Veto != "" {
				st.veto = regexp.MustCompile(cfg.Veto)
			}
			if cfg.VetoTools != "" {
				st.tools = regexp.MustCompile(cfg.VetoTools)
			}
			if cfg.AskTools != "" {
				st.askTools = regexp.MustCompile(cfg.AskTools)
			}
			if cfg.AskMessages != "" {
				st.askMessages = regexp.MustCompile(cfg.AskMessages)
			}
			st.slow = time.Duration(cfg.SlowValidate) * time.Millisecond
			st.pad = strings.Repeat("r", cfg.LongReason)
			sdk.Logger().Info("configured", "veto", cfg.Veto)
			return nil
		},
		Types: types,
		OnEvent: func(_ context.Context, ev *sdk.Event) error {
			st.mu.Lock()
			defer st.mu.Unlock()
			st.seen = append(st.seen, fmt.Sprintf("%d %s", ev.Seq, ev.Type))
			return nil
		},
		Validate: func(_ context.Context, ev *sdk.Event) error {
			time.Sleep(st.slow)
			st.mu.Lock()
			st.validated = append(st.validated, fmt.Sprintf("%d %s proposed=%v", ev.Seq, ev.Type, ev.Proposed))
			st.mu.Unlock()
			if ev.Type == session.TypeToolCall {
				c, err := sdk.Data[session.ToolCall](ev)
				if err != nil {
					return err
				}
				if st.tools != nil && st.tools.MatchString(c.Name) {
					return sdk.Veto("TEST", "the tool "+c.Name+" matches "+st.tools.String()+st.pad)
				}
				if st.askTools != nil && st.askTools.MatchString(c.Name) {
					return sdk.Ask("the tool " + c.Name + " needs a person")
				}
				return nil
			}
			if ev.Type != session.TypeUserMessage {
				return nil
			}
			m, err := sdk.Data[session.UserMessage](ev)
			if err != nil {
				return err
			}
			if st.askMessages != nil && st.askMessages.MatchString(m.Content) {
				return sdk.Ask("the message needs a person")
			}
			if st.veto != nil && st.veto.MatchString(m.Content) {
				return sdk.Veto("TEST", "the message matches "+st.veto.String()+st.pad)
			}
			return nil
		},
		OnSession: func(_ context.Context, id string) error {
			st.mu.Lock()
			defer st.mu.Unlock()
			st.seen = append(st.seen, "created")
			return nil
		},
		Tools: []sdk.Tool{
			{Name: "echo", Description: "echoes its arguments", Run: func(_ context.Context, args json.RawMessage) (string, error) {
				return string(args), nil
			}},
			{Name: "key", Description: "returns the call's idempotency key", Idempotent: true, Run: func(ctx context.Context, _ json.RawMessage) (string, error) {
				return sdk.IdempotencyKey(ctx), nil
			}},
			{Name: "pid", Description: "returns the process id", Run: func(context.Context, json.RawMessage) (string, error) {
				return strconv.Itoa(os.Getpid()), nil
			}},
			{Name: "seen", Description: "lists the events observed", Run: func(context.Context, json.RawMessage) (string, error) {
				st.mu.Lock()
				defer st.mu.Unlock()
				return strings.Join(st.seen, "\n"), nil
			}},
			{Name: "validated", Description: "lists the events validated", Run: func(context.Context, json.RawMessage) (string, error) {
				st.mu.Lock()
				defer st.mu.Unlock()
				return strings.Join(st.validated, "\n"), nil
			}},
			{Name: "crash", Description: "exits the process mid-call", Run: func(context.Context, json.RawMessage) (string, error) {
				sdk.Logger().Error("crashing on purpose")
				os.Exit(3)
				return "", nil
			}},
			{Name: "crash_leaving_child", Description: "exits mid-call, leaving a child that holds its stderr for 2s", Run: func(context.Context, json.RawMessage) (string, error) {
				// The host sees the connection break at once but the
				// process's exit only once its stderr is closed.
				child := exec.Command("sleep", "2")
				// fd 2 itself: go-plugin streams os.Stderr through a pipe.
				child.Stderr = os.NewFile(2, "stderr")
				if err := child.Start(); err != nil {
					return "", err
				}
				os.Exit(3)
				return "", nil
			}},
			{Name: "sleep", Description: "sleeps a minute, ignoring cancellation", Run: func(context.Context, json.RawMessage) (string, error) {
				time.Sleep(time.Minute)
				return "slept", nil
			}},
			sdk.NewTool("env", "returns the named environment variables", nil,
				func(_ context.Context, a struct {
					Names []string `json:"names"`
				}) (string, error) {
					var out []string
					for _, n := range a.Names {
						v, ok := os.LookupEnv(n)
						out = append(out, fmt.Sprintf("%s=%q(%v)", n, v, ok))
					}
					return strings.Join(out, " "), nil
				}),
			sdk.NewTool("messages", "reads a session's messages through the host", nil,
				func(ctx context.Context, a struct {
					Session string `json:"session"`
				}) (string, error) {
					msgs, err := st.host.Messages(ctx, a.Session)
					if err != nil {
						return "", err
					}
					b, err := json.Marshal(msgs)
					return string(b), err
				}),
			sdk.NewTool("emit", "emits an event and logs through the host", nil,
				func(ctx context.Context, a struct {
					Session string          `json:"session"`
					Data    json.RawMessage `json:"data"`
				}) (string, error) {
					if err := st.host.Log(ctx, hclog.Warn, "emitting", "session", a.Session); err != nil {
						return "", err
					}
					if err := st.host.Emit(ctx, "test/emitted", a.Session, a.Data); err != nil {
						return "", err
					}
					return "emitted", nil
				}),
		},
	})
}
