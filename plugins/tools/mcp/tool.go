package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// Error codes of the tool results of MCP calls that did not succeed: a
// tool/result's error code in the log, for readers of logs and for
// tool/execute listeners that branch on an outcome.
const (
	// CodeToolError: the server ran the tool and reported an error
	// (isError); the message is the result's content.
	CodeToolError = "MCP_TOOL_ERROR"
	// CodeRequestFailed: the server refused the call with a JSON-RPC
	// error (an unknown tool, invalid arguments).
	CodeRequestFailed = "MCP_REQUEST_FAILED"
	// CodeTimeout: no answer within the configured timeout; the call was
	// cancelled on the server and may or may not have taken effect.
	CodeTimeout = "MCP_TIMEOUT"
	// CodeUnavailable: the connection to the server failed or was lost.
	CodeUnavailable = "MCP_UNAVAILABLE"
)

// emptySchema stands for a tool that declares no input schema.
var emptySchema = json.RawMessage(`{"type":"object"}`)

// tool is one server tool offered to the model. It is immutable; a
// changed tool on the server is a new tool.
type tool struct {
	conn   *conn
	remote string // the server's name for it
	spec   session.ToolSpec
	safe   bool
}

// newTool describes t as offered under prefix.
func newTool(cn *conn, prefix string, t *mcpsdk.Tool) (*tool, error) {
	params := emptySchema
	if t.InputSchema != nil {
		b, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("tool %q: input schema: %w", t.Name, err)
		}
		if !bytes.Equal(b, []byte("null")) {
			params = b
		}
	}
	desc := t.Description
	if desc == "" {
		desc = t.Title
	}
	if desc == "" && t.Annotations != nil {
		desc = t.Annotations.Title
	}
	return &tool{
		conn:   cn,
		remote: t.Name,
		spec:   session.ToolSpec{Name: prefix + t.Name, Description: desc, Parameters: params, Idempotent: idempotent(t.Annotations)},
		// Only a tool that says it changes nothing may run alongside the
		// step's other calls.
		safe: t.Annotations != nil && t.Annotations.ReadOnlyHint,
	}, nil
}

// MetaIdempotencyKey is the key of a tools/call request's _meta under
// which every call carries its idempotency key (session.IdempotencyKey):
// the same on every run of the call, so a server can have the call's
// effect once.
const MetaIdempotencyKey = "vigil/idempotency-key"

// idempotent reads the server's annotations as Vigil's declaration: a
// call may run again with the same key when the tool changes nothing
// (readOnlyHint) or repeating it has no further effect (idempotentHint).
func idempotent(a *mcpsdk.ToolAnnotations) bool {
	return a != nil && (a.ReadOnlyHint || a.IdempotentHint)
}

// Spec implements [agentloop.Tool].
func (t *tool) Spec() session.ToolSpec {
	s := t.spec
	s.Parameters = bytes.Clone(s.Parameters)
	return s
}

// ConcurrencySafe implements [agentloop.ConcurrencySafe]: true for tools
// the server annotates as read-only.
func (t *tool) ConcurrencySafe() bool { return t.safe }

// sameAs reports whether u offers the model exactly what t does.
func (t *tool) sameAs(u *tool) bool {
	return t.remote == u.remote && t.spec.Name == u.spec.Name && t.spec.Description == u.spec.Description &&
		bytes.Equal(t.spec.Parameters, u.spec.Parameters) && t.safe == u.safe && t.spec.Idempotent == u.spec.Idempotent
}

// Execute implements [agentloop.Tool] with an MCP tools/call, carrying
// the call's idempotency key in its _meta.
func (t *tool) Execute(ctx context.Context, args json.RawMessage) (string, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	timeout := t.conn.cfg.timeout()
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	params := &mcpsdk.CallToolParams{Name: t.remote, Arguments: args}
	if key := agentloop.IdempotencyKey(ctx); key != "" {
		params.Meta = mcpsdk.Meta{MetaIdempotencyKey: key}
	}
	res, err := t.conn.cs.CallTool(cctx, params)
	if err != nil {
		var rpc *jsonrpc.Error
		switch {
		case ctx.Err() != nil:
			// The turn was cancelled: the loop reports the outcome as
			// unknown.
			return "", fmt.Errorf("tools/mcp: %s: %w", t.remote, err)
		case errors.Is(cctx.Err(), context.DeadlineExceeded):
			return "", &agentloop.ToolError{Code: CodeTimeout, Message: fmt.Sprintf(
				"the MCP server did not answer within %s; the call was cancelled and may or may not have taken effect", timeout)}
		case errors.As(err, &rpc):
			return "", &agentloop.ToolError{Code: CodeRequestFailed, Message: rpc.Message}
		default:
			return "", &agentloop.ToolError{Code: CodeUnavailable, Message: "the MCP server is unavailable: " + err.Error()}
		}
	}
	text := render(res)
	if res.IsError {
		return "", &agentloop.ToolError{Code: CodeToolError, Message: text}
	}
	return text, nil
}

var (
	_ agentloop.Tool            = (*tool)(nil)
	_ agentloop.ConcurrencySafe = (*tool)(nil)
)
