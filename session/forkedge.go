package session

import "fmt"

// ForkError is a fork whose log disagrees with its parent's at the point
// it forked: the root its header binds, or the records it inherited.
type ForkError struct {
	Fork, Parent string
	// Seq is the parent's seq the fork's header names.
	Seq int64
	Msg string
}

func (e *ForkError) Error() string {
	return fmt.Sprintf("session %s: fork of %s at seq %d: %s", e.Fork, e.Parent, e.Seq, e.Msg)
}

// CheckFork checks a fork against its parent's log (nil when fork is no
// fork, or parent is not the log its header names): the root its header
// binds (Parent.Root, when it has one) is the tree of the parent's
// records 0 to Parent.Seq, and the fork's first Parent.Seq+1 records are
// those records. A bound fork's own log proves its prefix has the root
// its header states; only the parent's log proves that root is the
// parent's, so a fork pointing at another parent, or a parent whose
// records before the fork were edited, is found here ([RuleEdgeMismatch]).
func CheckFork(fork, parent *Log) *ForkError {
	p := fork.Info.Parent
	if p == nil || p.Call != "" || p.ID != parent.Info.ID {
		return nil
	}
	fail := func(format string, args ...any) *ForkError {
		return &ForkError{Fork: fork.Info.ID, Parent: p.ID, Seq: p.Seq, Msg: fmt.Sprintf(format, args...)}
	}
	if p.Seq < 0 || p.Seq >= int64(len(parent.Records)) {
		return fail("the parent's log has seqs 0-%d", len(parent.Records)-1)
	}
	want := RootOf(parent.Records[:p.Seq+1])
	if p.Root != "" && p.Root != want {
		return fail("the fork's header binds the parent's records 0-%d with root %s, the parent's log has root %s: the parent was edited or swapped", p.Seq, p.Root, want)
	}
	if int64(len(fork.Records)) <= p.Seq {
		return fail("the fork holds %d records, not the %d it inherited", len(fork.Records), p.Seq+1)
	}
	if got := RootOf(fork.Records[:p.Seq+1]); got != want {
		return fail("the fork's records 0-%d have root %s, the parent's %s: the inherited records are not the parent's", p.Seq, got, want)
	}
	return nil
}
