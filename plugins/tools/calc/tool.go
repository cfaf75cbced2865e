package calc

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/session"
)

// Name is the plugin's registered name, as plugins.yaml and vigil.Plugin
// spell it.
const Name = "tools/calc"

// CodeInvalid marks a tool result for an expression that cannot be
// evaluated: the tool/result's error code in the log, for readers of logs
// and for tool/execute listeners.
const CodeInvalid = "INVALID_EXPRESSION"

// Tool is the calc tool. The zero value is ready to use.
type Tool struct{}

// Spec implements [agentloop.Tool].
func (Tool) Spec() session.ToolSpec {
	return session.ToolSpec{
		Name:        "calc",
		Description: "Evaluate an arithmetic expression: numbers, + - * / % ^, parentheses, sqrt abs floor ceil round.",
		Parameters:  json.RawMessage(`{"type":"object","properties":{"expression":{"type":"string","description":"for example (2+3)*4"}},"required":["expression"],"additionalProperties":false}`),
	}
}

// ConcurrencySafe implements [agentloop.ConcurrencySafe]: the tool is pure.
func (Tool) ConcurrencySafe() bool { return true }

// Execute implements [agentloop.Tool].
func (Tool) Execute(_ context.Context, args json.RawMessage) (string, error) {
	var a struct {
		Expression string `json:"expression"`
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		return "", &agentloop.ToolError{Code: CodeInvalid, Message: "arguments must be {\"expression\": string}: " + err.Error()}
	}
	v, err := eval(a.Expression)
	if err != nil {
		return "", &agentloop.ToolError{Code: CodeInvalid, Message: err.Error()}
	}
	return strconv.FormatFloat(v, 'g', -1, 64), nil
}

// Plugin provides the calc tool service.
// A Go program or test may apply it with bus.Context.Plugin.
var Plugin = bus.RegisterFunc(Name, "a pure arithmetic tool (calc)", func(c *bus.Context, _ struct{}) error {
	_, err := agentloop.ProvideTool(c, Tool{})
	return err
})

var (
	_ agentloop.Tool            = Tool{}
	_ agentloop.ConcurrencySafe = Tool{}
)
