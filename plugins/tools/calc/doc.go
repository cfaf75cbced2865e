// Package calc is the "tools/calc" plugin: a pure arithmetic tool the
// model can call, for demos and tests that want a deterministic tool with
// no side effects.
//
// Expressions support numbers, + - * / % ^ (right-associative power),
// unary signs, parentheses and the functions sqrt, abs, floor, ceil and
// round. Division by zero and results that are not finite are errors.
package calc
