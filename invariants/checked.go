package invariants

import "github.com/vigil-run/vigil/session"

// checkedPrefix is how far the plugin compared the last request of a
// session it passed: its first n messages, in the array req, equal the
// plugin's fold, in the array fold.
//
// A step's request carries agentloop's listeners' copy, which the loop
// keeps from step to step and grows with the new messages only. When the
// next request's messages are that same array, grown, and the fold is
// the same array too (no replace since), the first n positions are the
// very memory compared before, so only the rest is compared: the check
// costs what the step added. That memory still holds what was compared,
// because agentloop's seal refuses any request whose listeners' copy was
// written since it was made (a write this shortcut would not see is one
// the seal refuses), and the plugin's fold is its own and never written
// once made. Holding the two pointers keeps the arrays alive, so neither
// can be another array at the same address.
type checkedPrefix struct {
	req, fold *session.Message
	n         int
}

// checkedTo is the prefix of a request whose messages msgs equal fold.
func checkedTo(fold, msgs []session.Message) checkedPrefix {
	if len(msgs) == 0 || len(fold) == 0 {
		return checkedPrefix{}
	}
	return checkedPrefix{req: &msgs[0], fold: &fold[0], n: min(len(msgs), len(fold))}
}

// from is the position the comparison of msgs with fold starts at.
func (c checkedPrefix) from(fold, msgs []session.Message) int {
	if c.n == 0 || len(msgs) < c.n || len(fold) < c.n || &msgs[0] != c.req || &fold[0] != c.fold {
		return 0
	}
	return c.n
}
