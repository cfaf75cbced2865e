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

// LoadTree returns the tree of session id from the headers of st: its
// children are the sessions whose parent names id and a call, ordered by
// the seq of that call, then by id. A session whose header names itself
// among its ancestors cannot be stored, so the tree is finite.
func LoadTree(ctx context.Context, st Store, id string) (*Tree, error) {
	infos, err := st.List(ctx)
	var le *ListError
	if err != nil && !errors.As(err, &le) {
		return nil, fmt.Errorf("session: tree %s: %w", id, err)
	}
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
		return nil, fmt.Errorf("session: tree %s: %w", id, ErrNotFound)
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
// tool/result at Seq and the child session it names.
type DelegationError struct {
	Session string // the parent
	Seq     int64  // the parent's tool/result
	Child   string
	Msg     string
}

func (e *DelegationError) Error() string {
	return fmt.Sprintf("session %s seq %d: delegation to %s: %s", e.Session, e.Seq, e.Child, e.Msg)
}

// CheckDelegations checks the delegations of the parent log against the
// logs of its children (by id; a child absent from the map is reported):
// each tool/result that names a child answers the call the child's header
// names, at the seq it names, and, unless it is an error, its content is
// the content of the child's last assistant message up to the seq the
// result names. It also reports a child whose call the parent answered
// without naming it, or naming another session.
func CheckDelegations(parent *Log, children map[string]*Log) []*DelegationError {
	var out []*DelegationError
	named := map[string]bool{}
	answered := map[string]int64{} // call id → its tool/result seq, without child
	pid := parent.Info.ID
	for _, r := range parent.Records {
		if r.Type() != TypeToolResult {
			continue
		}
		res, ok := r.payload.(ToolResult)
		if !ok {
			continue
		}
		if res.Child == nil {
			answered[res.ID] = r.Seq()
			continue
		}
		fail := func(format string, args ...any) {
			out = append(out, &DelegationError{Session: pid, Seq: r.Seq(), Child: res.Child.ID, Msg: fmt.Sprintf(format, args...)})
		}
		named[res.Child.ID] = true
		child, ok := children[res.Child.ID]
		if !ok {
			fail("the child session is not in the store")
			continue
		}
		var callSeq int64 = -1
		if src := r.Sources(); len(src) == 1 {
			callSeq = src[0]
		}
		want := Parent{ID: pid, Seq: callSeq, Call: res.ID}
		if p := child.Info.Parent; p == nil || *p != want {
			fail("the child's header names parent %+v, the result answers %+v", child.Info.Parent, want)
			continue
		}
		if res.Child.Seq < 0 || res.Child.Seq >= int64(len(child.Records)) {
			fail("the result names child seq %d, the child log has seqs 0..%d", res.Child.Seq, len(child.Records)-1)
			continue
		}
		if res.Error != nil {
			continue
		}
		final, found := "", false
		for _, cr := range slices.Backward(child.Records[:res.Child.Seq+1]) {
			if m, ok := cr.payload.(AssistantMessage); ok && cr.Type() == TypeAssistantMessage {
				final, found = m.Content, true
				break
			}
		}
		if !found {
			fail("the child has no assistant message up to seq %d", res.Child.Seq)
		} else if final != res.Content {
			fail("the result's content %q is not the child's final message %q", short(res.Content), short(final))
		}
	}
	ids := make([]string, 0, len(children))
	for id := range children {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		c := children[id]
		p := c.Info.Parent
		if named[id] || p == nil || p.ID != pid {
			continue
		}
		if seq, ok := answered[p.Call]; ok {
			out = append(out, &DelegationError{Session: pid, Seq: seq, Child: id, Msg: fmt.Sprintf("the result of %s does not name the child that answers it", p.Call)})
		}
	}
	return out
}

func short(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
