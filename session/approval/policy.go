package approval

import (
	"path"
	"regexp"

	"github.com/vigil-run/vigil/session"
)

// Matcher is a compiled [session.ApprovalPolicy]. It is immutable and safe
// for concurrent use.
type Matcher struct {
	p  session.ApprovalPolicy
	re []*regexp.Regexp // per rule, nil without Arguments
}

// Compile checks p (see [session.CheckPolicy]) and compiles its patterns.
// The error matches [session.ErrInvalidPolicy] and names the rule (from 0).
func Compile(p session.ApprovalPolicy) (*Matcher, error) {
	re, err := session.PolicyPatterns(p)
	if err != nil {
		return nil, err
	}
	return &Matcher{p: p.Clone(), re: re}, nil
}

// Policy returns a copy of the policy m was compiled from.
func (m *Matcher) Policy() session.ApprovalPolicy { return m.p.Clone() }

// Match returns the action for a call of tool with arguments args, and
// the reason of the rule that decided it ("" for the default).
func (m *Matcher) Match(tool, args string) (action, reason string) {
	if i := m.match(tool, args); i >= 0 {
		return m.p.Rules[i].Action, m.p.Rules[i].Reason
	}
	return m.p.Default, ""
}

// match returns the index of the rule that decides a call, -1 for the
// default.
func (m *Matcher) match(tool, args string) int {
	for i, r := range m.p.Rules {
		if ok, _ := path.Match(r.Tool, tool); !ok {
			continue
		}
		if m.re[i] != nil && !m.re[i].MatchString(args) {
			continue
		}
		return i
	}
	return -1
}
