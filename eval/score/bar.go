package score

import "fmt"

// Bar is the pass mark every built-in scorer's config may set:
// `threshold`, the lowest score that passes. Without one a pair passes
// only with a score of 1 (the contract of [Result].Pass).
type Bar struct {
	Threshold *float64 `json:"threshold,omitempty"`
}

// Check says whether the threshold is a score, as a [*ConfigError].
func (b Bar) Check() error {
	if t := b.Threshold; t != nil && !(*t >= 0 && *t <= 1) {
		return keyError("threshold", "%v is not in [0, 1]", *t)
	}
	return nil
}

// Result is the Result of score under the bar: Pass when score reaches
// the threshold, or is 1 when there is none.
func (b Bar) Result(score float64, reason string) Result {
	pass := score == 1
	if b.Threshold != nil {
		pass = score >= *b.Threshold
	}
	return Result{Score: score, Pass: pass, Reason: reason}
}

// binary is the bar's Result of a yes-or-no check.
func (b Bar) binary(ok bool, yes, no string) Result {
	if ok {
		return b.Result(1, yes)
	}
	return b.Result(0, no)
}

// excerpt shortens s for a reason, which is one line in a table.
func excerpt(s string) string {
	const max = 60
	r := []rune(s)
	if len(r) > max {
		return fmt.Sprintf("%q…", string(r[:max]))
	}
	return fmt.Sprintf("%q", s)
}

// decodeChecked decodes raw into cfg and runs its check.
func decodeChecked[C interface{ check() error }](raw []byte, cfg C) error {
	if err := DecodeConfig(raw, cfg); err != nil {
		return err
	}
	return cfg.check()
}
