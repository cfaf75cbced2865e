package calc

// The evaluator and its errors, for the tests.
var (
	Eval              = eval
	ErrSyntax         = errSyntax
	ErrDivisionByZero = errDivisionByZero
	ErrNotFinite      = errNotFinite
	ErrTooComplex     = errTooComplex
)
