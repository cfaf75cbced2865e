package session

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Tree is a session and the sub-agent sessions it delegated to, which
// name it as their parent with a call (see [Parent]), recursively. Forks
// are not part of a tree: they inherit, children do not.
type Tree struct {
	Info     Info
	Children []*Tree
}

// Walk calls fn with every session of the tree, parents before their
// children, and each node's depth (0 for the root).
func (t *Tree) Walk(fn func(n *Tree, depth int)) {
	var walk func(n *Tree, d int)
	walk = func(n *Tree, d int) {
		fn(n, d)
		for _, c := range n.Children {
			walk(c, d+1)
		}
	}
	walk(t, 0)
}

// LoadTree returns the tree of session id from the headers of st (see
// [BuildTree]).
func LoadTree(ctx context.Context, st Store, id string) (*Tree, error) {
	infos, err := st.List(ctx)
	var le *ListError
	if err != nil && !errors.As(err, &le) {
		return nil, fmt.Errorf("session: tree %s: %w", id, err)
	}
	return BuildTree(infos, id)
}

// BuildTree returns the tree of session id among the headers infos: its
// children are the sessions whose parent names id and a call, ordered by
// the seq of that call, then by id; a session met again below itself (a
// cycle, which no store can hold but files can) is left out the second
// time, so the tree is finite.
func BuildTree(infos []Info, id string) (*Tree, error) {
	byParent := map[string][]Info{}
	var root *Info
	for i := range infos {
		in := infos[i]
		if in.ID == id {
			root = &infos[i]
		}
		if p := in.Parent; p != nil && p.Call != "" {
			byParent[p.ID] = append(byParent[p.ID], in)
		}
	}
	if root == nil {
		return nil, NotFound(id)
	}
	seen := map[string]bool{}
	var build func(in Info) *Tree
	build = func(in Info) *Tree {
		seen[in.ID] = true
		n := &Tree{Info: in}
		kids := byParent[in.ID]
		slices.SortFunc(kids, func(a, b Info) int {
			if a.Parent.Seq != b.Parent.Seq {
				return int(a.Parent.Seq - b.Parent.Seq)
			}
			return strings.Compare(a.ID, b.ID)
		})
		for _, k := range kids {
			if !seen[k.ID] {
				n.Children = append(n.Children, build(k))
			}
		}
		return n
	}
	return build(*root), nil
}

// DelegationError is a delegation whose logs disagree: the parent's
// record at Seq (the tool/result that names the child, or the tool/call
// the child's header names) and the child session.
type DelegationError struct {
	Session string // the parent
	Seq     int64
	Child   string
	Msg     string
	// Rule names what disagrees: [RuleEdgeMismatch] for a bound child
	// whose log is not the one the parent's root states, "" for the
	// other delegation checks.
	Rule string
}

// RuleEdgeMismatch names a tree edge whose root is not the other log's:
// a tool/result's child root (or a fork's parent root) that is not the
// tree hash of the other log up to the seq it names. The other log was
// swapped or edited.
const RuleEdgeMismatch = "edge-mismatch"

func (e *DelegationError) Error() string {
	return fmt.Sprintf("session %s seq %d: delegation to %s: %s", e.Session, e.Seq, e.Child, e.Msg)
}

// CheckDelegations checks the delegations of the parent log against the
// logs of its children (by id; a child absent from the map is reported):
//
//   - each tool/result that names a child answers the call the child's
//     header names, at the seq it names, and, unless it is an error, its
//     content is the content of the child's last assistant message up to
//     the seq the result names;
//   - each child's header names a tool/call of the parent, one no other
//     child names (a call starts one child session), and the child's
//     first user message is the task that call passed
//     ([DelegatedTask], with the tool's parameters in the parent's
//     request header in force at the call);
//   - no result answers a child's call without naming it, or naming
//     another session.
//
// Checked reports how many results naming a child were checked against
// its log.
func CheckDelegations(parent *Log, children map[string]*Log) (errs []*DelegationError, checked int) {
	c := &delegationCheck{parent: parent, children: children, failed: map[string]bool{}, named: map[string]string{}}
	c.results()
	c.calls()
	return c.out, c.checked
}

// delegationCheck is the state of one [CheckDelegations].
type delegationCheck struct {
	parent   *Log
	children map[string]*Log
	out      []*DelegationError
	checked  int
	// failed are the children already reported; named maps each call
	// whose result names a child to that child.
	failed map[string]bool
	named  map[string]string
	// answered maps each call id whose result names no child to the
	// result's seq.
	answered map[string]int64
}

func (c *delegationCheck) fail(seq int64, child, format string, args ...any) {
	c.failRule("", seq, child, format, args...)
}

func (c *delegationCheck) failRule(rule string, seq int64, child, format string, args ...any) {
	c.failed[child] = true
	c.out = append(c.out, &DelegationError{Session: c.parent.Info.ID, Seq: seq, Child: child, Msg: fmt.Sprintf(format, args...), Rule: rule})
}

// results checks each tool/result of the parent that names a child.
func (c *delegationCheck) results() {
	pid := c.parent.Info.ID
	c.answered = map[string]int64{}
	for _, r := range c.parent.Records {
		if r.Type() != TypeToolResult {
			continue
		}
		res, ok := r.pay().(ToolResult)
		if !ok {
			continue
		}
		if res.Child == nil {
			c.answered[res.ID] = r.Seq()
			continue
		}
		kid := res.Child.ID
		c.named[res.ID] = kid
		child, ok := c.children[kid]
		if !ok {
			c.fail(r.Seq(), kid, "no log of the child session was found")
			continue
		}
		var callSeq int64 = -1
		if src := r.Sources(); len(src) == 1 {
			callSeq = src[0]
		}
		want := Parent{ID: pid, Seq: callSeq, Call: res.ID}
		if p := child.Info.Parent; p == nil || *p != want {
			c.fail(r.Seq(), kid, "the child's header names parent %+v, the result answers %+v", child.Info.Parent, want)
			continue
		}
		c.checked++
		if res.Child.Seq < 0 || res.Child.Seq >= int64(len(child.Records)) {
			c.fail(r.Seq(), kid, "the result names child seq %d, the child log has seqs 0..%d", res.Child.Seq, len(child.Records)-1)
			continue
		}
		if bound := res.Child.Root; bound != "" {
			if got := RootOf(child.Records[:res.Child.Seq+1]); got != bound {
				c.failRule(RuleEdgeMismatch, r.Seq(), kid, "the result binds the child's records 0-%d with root %s, the child's log has root %s: the child was swapped or edited", res.Child.Seq, bound, got)
				continue
			}
		}
		if res.Error != nil {
			continue
		}
		final, found := "", false
		for _, cr := range slices.Backward(child.Records[:res.Child.Seq+1]) {
			if m, ok := cr.pay().(AssistantMessage); ok && cr.Type() == TypeAssistantMessage {
				final, found = m.Content, true
				break
			}
		}
		if !found {
			c.fail(r.Seq(), kid, "the child has no assistant message up to seq %d", res.Child.Seq)
		} else if final != res.Content {
			c.fail(r.Seq(), kid, "the result's content %q is not the child's final message %q", short(res.Content), short(final))
		}
	}
}

// calls checks each child against the call its header names.
func (c *delegationCheck) calls() {
	pid := c.parent.Info.ID
	ids := make([]string, 0, len(c.children))
	for id, l := range c.children {
		if p := l.Info.Parent; p != nil && p.ID == pid && p.Call != "" {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	started := map[string]string{} // call id → the child it started
	// The child a result names is the call's; other children come after.
	slices.SortStableFunc(ids, func(a, b string) int {
		na, nb := c.named[c.children[a].Info.Parent.Call] == a, c.named[c.children[b].Info.Parent.Call] == b
		switch {
		case na && !nb:
			return -1
		case nb && !na:
			return 1
		}
		return 0
	})
	for _, id := range ids {
		if c.failed[id] {
			continue
		}
		p := c.children[id].Info.Parent
		call, ok := c.callAt(p.Seq, p.Call)
		if !ok {
			c.fail(p.Seq, id, "the child's header names seq %d of the parent, which is no tool/call %q", p.Seq, p.Call)
			continue
		}
		if other, ok := started[p.Call]; ok {
			c.fail(p.Seq, id, "call %s already started child session %s: a call starts one child", p.Call, other)
			continue
		}
		started[p.Call] = id
		if seq, ok := c.answered[p.Call]; ok {
			c.fail(seq, id, "the result of %s does not name the child that answers it", p.Call)
			continue
		}
		c.task(p.Seq, id, call)
	}
}

// callAt returns the parent's tool/call at seq if its id is id.
func (c *delegationCheck) callAt(seq int64, id string) (ToolCall, bool) {
	recs := c.parent.Records
	if seq < 0 || seq >= int64(len(recs)) || recs[seq].Type() != TypeToolCall {
		return ToolCall{}, false
	}
	call, ok := recs[seq].pay().(ToolCall)
	return call, ok && call.ID == id
}

// task checks that child's first user message is the task call passed.
func (c *delegationCheck) task(seq int64, child string, call ToolCall) {
	h, _ := DeriveHeader(c.parent.Records[:seq])
	i := slices.IndexFunc(h.Tools, func(t ToolSpec) bool { return t.Name == call.Name })
	if i < 0 {
		c.fail(seq, child, "the parent's request header in force at the call offers no tool %q, so the task it passed is unknown", call.Name)
		return
	}
	task, err := DelegatedTask(h.Tools[i].Parameters, call.Arguments)
	if err != nil {
		c.fail(seq, child, "the call passed no task: %v", err)
		return
	}
	for _, r := range c.children[child].Records {
		if m, ok := r.pay().(UserMessage); ok && r.Type() == TypeUserMessage {
			if m.Content != task {
				c.fail(seq, child, "the child's first user message %q is not the task its call passed %q", short(m.Content), short(task))
			}
			return
		}
	}
	c.fail(seq, child, "the child has no user message: its call passed the task %q", short(task))
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
