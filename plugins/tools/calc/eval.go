package calc

import (
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Errors of eval, matched with errors.Is (the tool shows their text).
var (
	errSyntax         = errors.New("calc: syntax error")
	errDivisionByZero = errors.New("calc: division by zero")
	errNotFinite      = errors.New("calc: result is not finite")
	errTooComplex     = errors.New("calc: expression too complex")
)

const (
	maxLen   = 4096
	maxDepth = 64
)

// eval evaluates an arithmetic expression.
func eval(expr string) (float64, error) {
	if len(expr) > maxLen {
		return 0, fmt.Errorf("%w: longer than %d bytes", errTooComplex, maxLen)
	}
	p := &parser{s: expr}
	v, err := p.expr(0)
	if err != nil {
		return 0, err
	}
	p.space()
	if p.i < len(p.s) {
		return 0, p.errorf("unexpected %q", p.s[p.i])
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, errNotFinite
	}
	return v, nil
}

// parser is a recursive-descent parser over the grammar
//
//	expr   = term { ("+" | "-") term }
//	term   = unary { ("*" | "/" | "%") unary }
//	unary  = { "+" | "-" } power
//	power  = atom [ "^" unary ]
//	atom   = number | name "(" expr ")" | "(" expr ")"
type parser struct {
	s     string
	i     int
	depth int
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", errSyntax, p.i, fmt.Sprintf(format, args...))
}

func (p *parser) space() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t' || p.s[p.i] == '\n') {
		p.i++
	}
}

func (p *parser) peek() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return fmt.Errorf("%w: nested deeper than %d", errTooComplex, maxDepth)
	}
	return nil
}

func (p *parser) expr(_ int) (float64, error) {
	if err := p.enter(); err != nil {
		return 0, err
	}
	defer func() { p.depth-- }()
	v, err := p.term()
	if err != nil {
		return 0, err
	}
	for {
		switch p.peek() {
		case '+', '-':
			op := p.s[p.i]
			p.i++
			w, err := p.term()
			if err != nil {
				return 0, err
			}
			if op == '+' {
				v += w
			} else {
				v -= w
			}
		default:
			return v, nil
		}
	}
}

func (p *parser) term() (float64, error) {
	v, err := p.unary()
	if err != nil {
		return 0, err
	}
	for {
		switch p.peek() {
		case '*', '/', '%':
			op := p.s[p.i]
			p.i++
			w, err := p.unary()
			if err != nil {
				return 0, err
			}
			switch op {
			case '*':
				v *= w
			case '/':
				if w == 0 {
					return 0, errDivisionByZero
				}
				v /= w
			case '%':
				if w == 0 {
					return 0, errDivisionByZero
				}
				v = math.Mod(v, w)
			}
		default:
			return v, nil
		}
	}
}

func (p *parser) unary() (float64, error) {
	if err := p.enter(); err != nil {
		return 0, err
	}
	defer func() { p.depth-- }()
	switch p.peek() {
	case '-':
		p.i++
		v, err := p.unary()
		return -v, err
	case '+':
		p.i++
		return p.unary()
	}
	return p.power()
}

func (p *parser) power() (float64, error) {
	v, err := p.atom()
	if err != nil {
		return 0, err
	}
	if p.peek() == '^' {
		p.i++
		w, err := p.unary()
		if err != nil {
			return 0, err
		}
		return math.Pow(v, w), nil
	}
	return v, nil
}

var funcs = map[string]func(float64) float64{
	"sqrt":  math.Sqrt,
	"abs":   math.Abs,
	"floor": math.Floor,
	"ceil":  math.Ceil,
	"round": math.Round,
}

func (p *parser) atom() (float64, error) {
	c := p.peek()
	switch {
	case c == '(':
		return p.group()
	case isDigit(c) || c == '.':
		return p.number()
	case c >= 'a' && c <= 'z':
		return p.call()
	case c == 0:
		return 0, p.errorf("unexpected end of expression")
	default:
		return 0, p.errorf("unexpected %q", c)
	}
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// group reads an expression in parentheses.
func (p *parser) group() (float64, error) {
	p.i++
	v, err := p.expr(0)
	if err != nil {
		return 0, err
	}
	if p.peek() != ')' {
		return 0, p.errorf("missing )")
	}
	p.i++
	return v, nil
}

// number reads a decimal number with an optional exponent.
func (p *parser) number() (float64, error) {
	start := p.i
	for p.i < len(p.s) && (isDigit(p.s[p.i]) || p.s[p.i] == '.') {
		p.i++
	}
	p.exponent()
	v, err := strconv.ParseFloat(p.s[start:p.i], 64)
	if err != nil {
		p.i = start
		return 0, p.errorf("bad number %q", p.s[start:p.i])
	}
	return v, nil
}

// exponent reads a number's exponent (e, a sign, digits) if one follows;
// an e without digits is left for the caller to refuse.
func (p *parser) exponent() {
	if p.i >= len(p.s) || p.s[p.i] != 'e' && p.s[p.i] != 'E' {
		return
	}
	j := p.i + 1
	if j < len(p.s) && (p.s[j] == '+' || p.s[j] == '-') {
		j++
	}
	if j < len(p.s) && isDigit(p.s[j]) {
		p.i = j
		for p.i < len(p.s) && isDigit(p.s[p.i]) {
			p.i++
		}
	}
}

// call reads a function's name and its argument in parentheses.
func (p *parser) call() (float64, error) {
	start := p.i
	for p.i < len(p.s) && p.s[p.i] >= 'a' && p.s[p.i] <= 'z' {
		p.i++
	}
	name := p.s[start:p.i]
	fn, ok := funcs[name]
	if !ok {
		p.i = start
		return 0, p.errorf("unknown function %q", name)
	}
	if p.peek() != '(' {
		return 0, p.errorf("%s needs (", name)
	}
	v, err := p.atom()
	if err != nil {
		return 0, err
	}
	return fn(v), nil
}
