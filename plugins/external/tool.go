package external

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/vigil-run/vigil/agentloop"
	pluginpb "github.com/vigil-run/vigil/plugins/external/proto"
	"github.com/vigil-run/vigil/session"
)

// Tool error codes of calls that never got the plugin's answer: a
// tool/result's error code in the log, for readers of logs and for
// tool/execute listeners that branch on an outcome.
const (
	// CodeTimeout: the plugin did not answer within the timeout.
	CodeTimeout = "PLUGIN_TIMEOUT"
	// CodeUnavailable: the plugin process is gone (crashed or disposed).
	CodeUnavailable = "PLUGIN_UNAVAILABLE"
)

// tool is a plugin's tool, provided as an agentloop tool service whose
// Execute calls the plugin.
type tool struct {
	cn   *conn
	spec session.ToolSpec
	safe bool
}

func newTool(cn *conn, t *pluginpb.Tool) (*tool, error) {
	spec := session.ToolSpec{Name: t.GetName(), Description: t.GetDescription(), Idempotent: t.GetIdempotent()}
	if p := t.GetParameters(); len(p) > 0 {
		if !json.Valid(p) {
			return nil, errors.New("parameters are not valid JSON")
		}
		spec.Parameters = json.RawMessage(p)
	}
	return &tool{cn: cn, spec: spec, safe: t.GetConcurrencySafe()}, nil
}

// Spec implements agentloop.Tool.
func (t *tool) Spec() session.ToolSpec { return t.spec }

// ConcurrencySafe implements agentloop.ConcurrencySafe, as the plugin
// declared.
func (t *tool) ConcurrencySafe() bool { return t.safe }

// Execute implements agentloop.Tool: one CallTool round trip, bounded by
// the timeout, carrying the call's idempotency key. A plugin that does not answer in time or is gone gives a
// coded error the model sees.
func (t *tool) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	cctx, cancel := t.cn.callCtx(ctx)
	defer cancel()
	resp, err := t.cn.rpc.CallTool(cctx, &pluginpb.CallToolRequest{Name: t.spec.Name, Arguments: args, IdempotencyKey: agentloop.IdempotencyKey(ctx)})
	if err != nil {
		err = t.cn.callErr(ctx, "tool "+t.spec.Name, err)
		switch {
		case errors.Is(err, ErrTimeout):
			return "", &agentloop.ToolError{Code: CodeTimeout, Message: err.Error()}
		case errors.Is(err, ErrExited):
			return "", &agentloop.ToolError{Code: CodeUnavailable, Message: err.Error()}
		}
		return "", err
	}
	if e := resp.GetError(); e != nil {
		code := e.GetCode()
		if code == "" {
			code = agentloop.CodeToolFailed
		}
		return "", &agentloop.ToolError{Code: code, Message: e.GetMessage()}
	}
	return resp.GetContent(), nil
}

var (
	_ agentloop.Tool            = (*tool)(nil)
	_ agentloop.ConcurrencySafe = (*tool)(nil)
)
