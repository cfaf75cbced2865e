package sdk

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session"
)

// Host is the host's side of the conversation: the services a plugin can
// call back. It is handed to [Plugin.Configure] and valid until the
// plugin is disposed. Its methods are safe for concurrent use.
//
// Don't call the host from Validate for the session being validated and
// wait on an append to it: appends to one session are serial.
type Host struct {
	conn   *grpc.ClientConn
	client pluginpb.HostClient
}

func newHost(conn *grpc.ClientConn) *Host {
	return &Host{conn: conn, client: pluginpb.NewHostClient(conn)}
}

// NewHost returns a Host over a client of the Host service, for tests
// and for plugins served by other means than [Serve].
func NewHost(client pluginpb.HostClient) *Host { return &Host{client: client} }

func (h *Host) close() {
	if h.conn != nil {
		_ = h.conn.Close()
	}
}

// Emit dispatches an external/event named name on the host's bus, about
// sessionID when it is not empty, with data encoded as JSON. An error
// is the refusal of a listener on the host.
func (h *Host) Emit(ctx context.Context, name, sessionID string, data any) error {
	b, err := json.Marshal(data)
	if err != nil {
		return fmt.Errorf("sdk: emit %s: %w", name, err)
	}
	if _, err := h.client.Emit(ctx, &pluginpb.EmitRequest{Name: name, Session: sessionID, Data: b}); err != nil {
		return fmt.Errorf("sdk: emit %s: %w", name, err)
	}
	return nil
}

// Messages returns the messages derived from a session's log: what the
// model would see of it.
func (h *Host) Messages(ctx context.Context, sessionID string) ([]session.Message, error) {
	resp, err := h.client.Messages(ctx, &pluginpb.MessagesRequest{Session: sessionID})
	if err != nil {
		return nil, fmt.Errorf("sdk: messages of %s: %w", sessionID, err)
	}
	out := make([]session.Message, len(resp.GetMessages()))
	for i, m := range resp.GetMessages() {
		out[i] = session.Message{Role: m.GetRole(), Content: m.GetContent(), Reasoning: m.GetReasoning(), ToolCallID: m.GetToolCallId(), Name: m.GetName()}
		for _, c := range m.GetToolCalls() {
			out[i].ToolCalls = append(out[i].ToolCalls, session.ToolCall{ID: c.GetId(), Name: c.GetName(), Arguments: c.GetArguments()})
		}
	}
	return out, nil
}

// Log writes an entry to the plugin's logger on the host through the
// Host service. args are key/value pairs, as with hclog. [Logger] is
// cheaper (no round trip) and works before Configure; Log exists for
// entries that must reach the host in order with the calls around them.
func (h *Host) Log(ctx context.Context, level hclog.Level, msg string, args ...any) error {
	fields := make(map[string]string, len(args)/2)
	for i := 0; i+1 < len(args); i += 2 {
		fields[fmt.Sprint(args[i])] = fmt.Sprint(args[i+1])
	}
	if len(args)%2 == 1 {
		fields["EXTRA_VALUE_AT_END"] = fmt.Sprint(args[len(args)-1])
	}
	_, err := h.client.Log(ctx, &pluginpb.LogRequest{Level: logLevel(level), Message: msg, Fields: fields})
	if err != nil {
		return fmt.Errorf("sdk: log: %w", err)
	}
	return nil
}

func logLevel(l hclog.Level) pluginpb.LogRequest_Level {
	switch l {
	case hclog.Trace:
		return pluginpb.LogRequest_LEVEL_TRACE
	case hclog.Debug:
		return pluginpb.LogRequest_LEVEL_DEBUG
	case hclog.Warn:
		return pluginpb.LogRequest_LEVEL_WARN
	case hclog.Error:
		return pluginpb.LogRequest_LEVEL_ERROR
	default:
		return pluginpb.LogRequest_LEVEL_INFO
	}
}
