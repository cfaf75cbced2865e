package agentloop

import (
	"context"
	"encoding/json"

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

// ProvideTool provides t as a tool service owned by c's fiber.
func ProvideTool(c *bus.Context, t Tool) (withdraw func(), err error) {
	return ToolServices.Key(t.Spec().Name).Provide(c, t)
}

// ToolError is an error with a code, shown to the model in a tool result.
type ToolError struct {
	Code    string
	Message string
}

func (e *ToolError) Error() string { return e.Code + ": " + e.Message }
