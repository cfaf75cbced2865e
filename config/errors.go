package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Sentinel errors for callers that branch on the kind of problem.
var (
	ErrUnknownKey    = errors.New("unknown key")
	ErrUnknownPlugin = errors.New("unknown plugin")
	ErrMissingKey    = errors.New("missing required key")
	ErrUnsetVariable = errors.New("unset environment variable")
	ErrType          = errors.New("wrong type")
	ErrSyntax        = errors.New("syntax error")
	ErrDuplicateID   = errors.New("duplicate id")
	ErrInvalid       = errors.New("invalid config")
	ErrBadVariable   = errors.New("malformed ${VAR}")
	ErrTooLarge      = errors.New("config too large")
)

// Error is a problem at a position in a config file. Its message starts
// with file:line:col.
type Error struct {
	File      string
	Line, Col int
	Msg       string
	Err       error // one of the sentinels above, or a validation error
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Msg)
}

func (e *Error) Unwrap() error { return e.Err }

// Errors is every problem of a file, in the order of the file, when it
// has more than one: one run reports them all. errors.Is and errors.As
// see each of them.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// problems is the error of a file with the given problems: nil for
// none, the *Error itself for one, else Errors in the file's order.
func problems(ps []*Error) error {
	switch len(ps) {
	case 0:
		return nil
	case 1:
		return ps[0]
	}
	es := Errors(slices.Clone(ps))
	slices.SortStableFunc(es, func(a, b *Error) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
	return es
}
