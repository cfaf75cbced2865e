package calc_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/tools/calc"
)

func TestEvalComputesArithmetic(t *testing.T) {
	cases := []struct {
		expr string
		want float64
	}{
		{"1+2", 3},
		{" 2 * (3 + 4) ", 14},
		{"10/4", 2.5},
		{"7 % 3", 1},
		{"2^3^2", 512},
		{"-2^2", -4},
		{"--3", 3},
		{"2*-3", -6},
		{"1.5e2", 150},
		{"sqrt(16)+abs(-2)", 6},
		{"round(2.5)+floor(1.9)+ceil(1.1)", 6},
		{"(((1)))", 1},
	}
	for _, tc := range cases {
		t.Run(tc.expr, func(t *testing.T) {
			got, err := calc.Eval(tc.expr)
			require.NoError(t, err)
			assert.InDelta(t, tc.want, got, 1e-12)
		})
	}
}

func TestEvalRejectsBadInput(t *testing.T) {
	cases := []struct {
		expr string
		want error
	}{
		{"", calc.ErrSyntax},
		{"1+", calc.ErrSyntax},
		{"(1", calc.ErrSyntax},
		{"1 2", calc.ErrSyntax},
		{"foo(1)", calc.ErrSyntax},
		{"sqrt 4", calc.ErrSyntax},
		{"1..2", calc.ErrSyntax},
		{"1/0", calc.ErrDivisionByZero},
		{"1%0", calc.ErrDivisionByZero},
		{"10^400", calc.ErrNotFinite},
		{"sqrt(-1)", calc.ErrNotFinite},
		{string(make([]byte, 5000)), calc.ErrTooComplex},
		{repeat("(", 100) + "1" + repeat(")", 100), calc.ErrTooComplex},
		{repeat("-", 100) + "1", calc.ErrTooComplex},
	}
	for _, tc := range cases {
		t.Run(tc.expr[:min(len(tc.expr), 20)], func(t *testing.T) {
			_, err := calc.Eval(tc.expr)
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

func repeat(s string, n int) string {
	out := ""
	for range n {
		out += s
	}
	return out
}

func TestToolReturnsResultOrToolError(t *testing.T) {
	var tool calc.Tool
	got, err := tool.Execute(context.Background(), json.RawMessage(`{"expression":"6*7"}`))
	require.NoError(t, err)
	assert.Equal(t, "42", got)

	for _, args := range []string{`{"expression":"6*"}`, `{"expr":"1"}`, `"x"`} {
		_, err = tool.Execute(context.Background(), json.RawMessage(args))
		var te *agentloop.ToolError
		require.ErrorAs(t, err, &te, args)
		assert.Equal(t, calc.CodeInvalid, te.Code)
	}
}

func FuzzEval(f *testing.F) {
	for _, s := range []string{"1+2", "2^3^2", "sqrt(16)", "((1)", "-1e308*10"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = calc.Eval(s) // must not panic or overflow the stack
	})
}
