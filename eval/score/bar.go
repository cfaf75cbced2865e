package score

import "fmt"

// Bar is the pass mark every built-in scorer's config may set:
// `threshold`, the lowest score that passes. Without one a pair passes
// only with a score of 1 (the contract of [Result].Pass).
type Bar struct {
	Threshold *float64 `json:"threshold,omitempty"`
}

// check says whether the threshold is a score.
func (b Bar) check() error {
	if t := b.Threshold; t != nil && !(*t >= 0 && *t <= 1) {
		return keyError("threshold", "%v is not in [0, 1]", *t)
	}
	return nil
}

// result is the Result of score under the bar.
func (b Bar) result(score float64, reason string) Result {
	pass := score == 1
	if b.Threshold != nil {
		pass = score >= *b.Threshold
	}
	return Result{Score: score, Pass: pass, Reason: reason}
}

// binary is the bar's Result of a yes-or-no check.
func (b Bar) binary(ok bool, yes, no string) Result {
	if ok {
		return b.result(1, yes)
	}
	return b.result(0, no)
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
