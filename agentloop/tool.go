package agentloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Tool is something the model can call. A plugin provides a tool as a
// service named "tool/" + its name (see [ProvideTool]).
type Tool interface {
	Spec() session.ToolSpec
	// Execute runs the tool with the model's JSON arguments and returns
	// the text the model sees. An error is shown to the model as an
	// error tool result.
	Execute(ctx context.Context, args json.RawMessage) (string, error)
}

// ConcurrencySafe is implemented by tools that may run concurrently with
// other calls of the same step.
type ConcurrencySafe interface {
	ConcurrencySafe() bool
}

// ToolServicePrefix prefixes the service name of every tool.
const ToolServicePrefix = "tool/"

// ToolServices is the key of every tool service: a plugin that reads the
// tools declares it with bus.Optional.
var ToolServices = bus.NewServiceSet[Tool](ToolServicePrefix)

// ProvideTool provides t as a tool service owned by c's fiber. A tool
// whose name the model APIs would refuse (see [CheckToolName]) is not
// provided: an error wrapping [ErrToolName].
func ProvideTool(c *bus.Context, t Tool) (withdraw func(), err error) {
	name := t.Spec().Name
	if err := CheckToolName(name); err != nil {
		return nil, err
	}
	return ToolServices.Key(name).Provide(c, t)
}

// maxEcho bounds what of a model's tool call (its name, its arguments) an
// error or a record's message quotes: the call itself is logged whole.
const maxEcho = 200

// ErrToolName is the class of a tool name no model API accepts.
var ErrToolName = errors.New("invalid tool name")

// maxToolName is the longest tool name the model APIs accept.
const maxToolName = 64

// CheckToolName reports why name cannot name a tool offered to a model:
// the provider APIs take 1 to 64 ASCII letters, digits, underscores and
// hyphens (^[a-zA-Z0-9_-]{1,64}$), and a name from outside (an MCP
// server's, a plugin process's) may be anything, a path included. The
// error quotes at most the name's first 64 bytes.
func CheckToolName(name string) error {
	quoted := strconv.Quote(name[:min(len(name), maxToolName)])
	if len(name) > maxToolName {
		quoted += "…"
	}
	switch {
	case name == "":
		return fmt.Errorf("%w: the name is empty", ErrToolName)
	case len(name) > maxToolName:
		return fmt.Errorf("%w: %s is %d bytes long, more than %d", ErrToolName, quoted, len(name), maxToolName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return fmt.Errorf("%w: %s holds %q; a tool name is letters, digits, _ and - only", ErrToolName, quoted, r)
		}
	}
	return nil
}

// ToolError is an error with a code, shown to the model in a tool result.
type ToolError struct {
	Code    string
	Message string
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Message }
