package config

import (
	"errors"
	"fmt"
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
