package invariants

import "github.com/vigil-run/vigil/session"

// checkedPrefix is how far the plugin compared the last request of a
// session it passed: its first n messages, the view req, equal the
// plugin's fold, in the array fold.
//
// A step's request carries a read-only view of agentloop's fold
// ([session.Messages]), which grows with the new messages only. When the
// next request's view shares its array with req (no replace, no growth
// of the loop's fold into a new array since), its first n messages are
// the very memory compared before, which nobody can write
// ([session.Messages.SharedPrefix]); when the fold is the same array too,
// so are its first n. Then only the rest is compared: the check costs
// what the step added. Holding req and the pointer keeps both arrays
// alive, so neither can be another array at the same address.
type checkedPrefix struct {
	req  session.Messages
	fold *session.Message
	n    int
}

// checkedTo is the prefix of a request whose messages msgs equal fold.
func checkedTo(fold []session.Message, msgs session.Messages) checkedPrefix {
	if msgs.Len() == 0 || len(fold) == 0 {
		return checkedPrefix{}
	}
	return checkedPrefix{req: msgs, fold: &fold[0], n: min(msgs.Len(), len(fold))}
}

// from is the position the comparison of msgs with fold starts at.
func (c checkedPrefix) from(fold []session.Message, msgs session.Messages) int {
	if c.n == 0 || len(fold) < c.n || &fold[0] != c.fold || msgs.SharedPrefix(c.req) < c.n {
		return 0
	}
	return c.n
}
