package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/vigil-run/vigil/plugins/external/sdk"
)

// unit is a unit of one dimension: value in the dimension's base unit =
// value*factor + offset.
type unit struct {
	dim            string
	factor, offset float64
}

var units = map[string]unit{
	"m": {"length", 1, 0}, "km": {"length", 1000, 0}, "cm": {"length", 0.01, 0}, "mm": {"length", 0.001, 0},
	"mi": {"length", 1609.344, 0}, "yd": {"length", 0.9144, 0}, "ft": {"length", 0.3048, 0}, "in": {"length", 0.0254, 0},
	"nmi": {"length", 1852, 0}, "ly": {"length", 9.4607304725808e15, 0},
	"kg": {"mass", 1, 0}, "g": {"mass", 0.001, 0}, "mg": {"mass", 1e-6, 0}, "t": {"mass", 1000, 0},
	"lb": {"mass", 0.45359237, 0}, "oz": {"mass", 0.028349523125, 0},
	"s": {"time", 1, 0}, "min": {"time", 60, 0}, "h": {"time", 3600, 0}, "d": {"time", 86400, 0}, "wk": {"time", 604800, 0},
	"K": {"temperature", 1, 0}, "C": {"temperature", 1, 273.15}, "F": {"temperature", 5.0 / 9, 273.15 - 32*5.0/9},
}

// CodeUnit marks a result for an unknown unit or units of different
// dimensions.
const CodeUnit = "UNIT"

type converter struct {
	precision int
}

func (c *converter) configure(cfg Config) error {
	switch {
	case cfg.Precision < 0 || cfg.Precision > 17:
		return fmt.Errorf("precision must be between 1 and 17, got %d", cfg.Precision)
	case cfg.Precision > 0:
		c.precision = cfg.Precision
	}
	return nil
}

type args struct {
	Value float64 `json:"value"`
	From  string  `json:"from"`
	To    string  `json:"to"`
}

func (c *converter) tool() sdk.Tool {
	t := sdk.NewTool("convert", "Convert a value between units: "+strings.Join(unitNames(), ", ")+".",
		json.RawMessage(`{"type":"object","properties":{"value":{"type":"number"},"from":{"type":"string"},"to":{"type":"string"}},"required":["value","from","to"],"additionalProperties":false}`),
		func(_ context.Context, a args) (string, error) { return c.convert(a) })
	t.ConcurrencySafe = true
	return t
}

func (c *converter) convert(a args) (string, error) {
	from, ok := units[a.From]
	if !ok {
		return "", &sdk.ToolError{Code: CodeUnit, Message: fmt.Sprintf("unknown unit %q", a.From)}
	}
	to, ok := units[a.To]
	if !ok {
		return "", &sdk.ToolError{Code: CodeUnit, Message: fmt.Sprintf("unknown unit %q", a.To)}
	}
	if from.dim != to.dim {
		return "", &sdk.ToolError{Code: CodeUnit, Message: fmt.Sprintf("cannot convert %s (%s) to %s (%s)", a.From, from.dim, a.To, to.dim)}
	}
	v := (a.Value*from.factor + from.offset - to.offset) / to.factor
	return strconv.FormatFloat(v, 'g', c.precision, 64) + " " + a.To, nil
}

func unitNames() []string {
	out := make([]string, 0, len(units))
	for n := range units {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
