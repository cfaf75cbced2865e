package approval_test

import (
	"fmt"
	"time"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/approval"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// A policy is compiled once and matched against each call: the first
// rule that matches decides, else the default.
func ExampleCompile() {
	m, err := approval.Compile(session.ApprovalPolicy{
		By:      "approvals",
		Default: session.ActionAllow,
		Rules: []session.ApprovalRule{
			{Tool: "shell", Arguments: `rm\s+-rf`, Action: session.ActionDeny, Reason: "no recursive deletes"},
			{Tool: "shell", Action: session.ActionAsk, Reason: "shell needs a yes"},
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, args := range []string{`{"cmd":"rm -rf /"}`, `{"cmd":"ls"}`} {
		action, reason := m.Match("shell", args)
		fmt.Printf("shell %s: %s (%s)\n", args, action, reason)
	}
	action, _ := m.Match("calc", `{"expr":"1+1"}`)
	fmt.Println("calc:", action)

	// "Always for this session" covers later calls of the same tool that
	// the same rule asks about, whatever their arguments.
	ask := session.ApprovalRequest{By: "approvals", Reason: "shell needs a yes"}
	ls := approval.CoverOf(m, session.ToolCall{Name: "shell", Arguments: `{"cmd":"ls"}`}, ask)
	pwd := approval.CoverOf(m, session.ToolCall{Name: "shell", Arguments: `{"cmd":"pwd"}`}, ask)
	fmt.Println("an allow of ls covers pwd:", ls == pwd)

	_, err = approval.Compile(session.ApprovalPolicy{Default: "maybe"})
	fmt.Println(err)
	// Output:
	// shell {"cmd":"rm -rf /"}: deny (no recursive deletes)
	// shell {"cmd":"ls"}: ask (shell needs a yes)
	// calc: allow
	// an allow of ls covers pwd: true
	// session: invalid payload: approval policy: default "maybe" is not allow, deny or ask
}

// A person's decision is checked against the log before it is logged:
// it answers a call the suspended step waits on, once.
func ExampleCheckDecision() {
	// A step that asked about calls a and c and ran b.
	var recs []session.Record
	for i, ev := range sessiontest.SuspendedStep() {
		r, err := session.NewRecord(int64(i), time.Now(), ev)
		if err != nil {
			fmt.Println(err)
			return
		}
		recs = append(recs, r)
	}
	ev, err := approval.CheckDecision(recs, "a", session.ApprovalDecision{Allow: true, By: "ann", Scope: session.ScopeSession})
	fmt.Println(ev.Type, ev.Turn, ev.Step, ev.Data, err)

	_, err = approval.CheckDecision(recs, "b", session.ApprovalDecision{Allow: true, By: "ann"})
	fmt.Println(err)
	// Output:
	// approval/decision 1 1 {a true ann  session 0} <nil>
	// session: tool call not pending a decision: "b"
}
