package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
)

func newSessionsTreeCmd(e *env) *cobra.Command {
	var cfg string
	cmd := &cobra.Command{
		Use:   "tree ID",
		Short: "Show a session and the sub-agent sessions it delegated to",
		Long: `Print the tree of a session: each child session (a sub-agent's turn, whose
header names its parent and the tool call it answers) indented under its
parent, with that call and the seq of its tool/call in the parent.`,
		Example:           `  vigil sessions tree 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A`,
		Args:              exactArgs(1, "1 argument (a session id)"),
		ValidArgsFunction: completeSessionIDs(e, false),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			mgr, done, err := sessionsManager(e, cfg, true)
			if err != nil {
				return err
			}
			defer done()
			tree, err := session.LoadTree(cmd.Context(), mgr.Store(), args[0])
			if err != nil {
				return err
			}
			tree.Walk(func(n *session.Tree, depth int) {
				line := n.Info.ID
				if p := n.Info.Parent; depth > 0 && p != nil {
					line += fmt.Sprintf("  (%s at seq %d)", p.Call, p.Seq)
				}
				fmt.Fprintf(e.stdout, "%s%s\n", strings.Repeat("  ", depth), line)
			})
			return nil
		}),
	}
	configFlag(cmd, &cfg)
	return cmd
}

// treeRule is the rule id `verify --tree` reports a delegation under.
const treeRule = "delegation"

// treeLog is one log of the trees `verify --tree` checks: its label (the
// session id, or the file it was read from), its bytes, and the log they
// decode to.
type treeLog struct {
	label string
	data  []byte
	log   *session.Log
}

// forest is the logs `verify --tree` checks, by session id, and the
// roots of their trees, in the order the arguments named them.
type forest struct {
	logs  map[string]*treeLog
	infos []session.Info
	roots []string
	// items are the logs verified alone: those no tree holds (a file
	// that does not decode), or that could not be read.
	items []verifyItem
	audit *invariants.Audit // checks each log's checkpoints; nil for none
	// parents are the logs forks were forked from that no tree holds
	// (loaded from the store), by id.
	parents map[string]*session.Log
}

func (f *forest) add(id string, l *treeLog) {
	f.logs[id] = l
	f.infos = append(f.infos, l.log.Info)
}

// verifyTrees verifies every session of the trees args name, each log by
// the invariants' rules and each delegation's child against its call and
// result. An argument is a session id (its tree in the store of the
// composition) or a log file or directory of them (the files given form
// one set, and every tree among them is checked).
func verifyTrees(ctx context.Context, e *env, cfg string, h **host, args []string, audit *invariants.Audit) ([]verifyItem, error) {
	f := &forest{logs: map[string]*treeLog{}, audit: audit, parents: map[string]*session.Log{}}
	var files []string
	for _, arg := range args {
		if _, err := os.Stat(arg); err == nil {
			files = append(files, arg)
			continue
		}
		if !session.ValidID(arg) {
			f.items = append(f.items, verifyItem{label: arg, err: notFoundf("no such file or session id")})
			continue
		}
		if err := f.loadStored(ctx, e, cfg, h, arg); err != nil {
			var ce *configError
			if errors.As(err, &ce) {
				return nil, err
			}
			f.items = append(f.items, verifyItem{label: arg, err: err})
		}
	}
	if err := f.loadFiles(files); err != nil {
		return nil, err
	}
	return append(f.items, f.verify()...), nil
}

// loadStored adds the tree of session id in the store.
func (f *forest) loadStored(ctx context.Context, e *env, cfg string, h **host, id string) error {
	mgr, err := storedSessions(e, cfg, h)
	if err != nil {
		return err
	}
	tree, err := session.LoadTree(ctx, mgr.Store(), id)
	if err != nil {
		return err
	}
	var walkErr error
	tree.Walk(func(n *session.Tree, _ int) {
		if walkErr != nil || f.logs[n.Info.ID] != nil {
			return
		}
		log, err := mgr.Store().Load(ctx, n.Info.ID)
		if err != nil {
			walkErr = fmt.Errorf("%s: %w", n.Info.ID, err)
			return
		}
		f.add(n.Info.ID, &treeLog{label: n.Info.ID, data: encodeLog(log.Info, log.Records), log: log})
	})
	if walkErr != nil {
		return walkErr
	}
	f.roots = append(f.roots, id)
	// A fork is checked against its parent's log, when the store still
	// holds it (a fork outlives its parent).
	if p := tree.Info.Parent; p != nil && p.Call == "" && f.logs[p.ID] == nil && f.parents[p.ID] == nil {
		log, err := mgr.Store().Load(ctx, p.ID)
		switch {
		case err == nil:
			f.parents[p.ID] = log
		case !errors.Is(err, session.ErrNotFound):
			return fmt.Errorf("%s: parent %s: %w", id, p.ID, err)
		}
	}
	return nil
}

// loadFiles adds the logs of files (and of the directories among them),
// and makes a root of each log whose parent is not among them.
func (f *forest) loadFiles(files []string) error {
	paths, err := expandLogs(files)
	if err != nil {
		return err
	}
	var ids []string
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.items = append(f.items, verifyItem{label: p, err: err})
			continue
		}
		log, err := session.Decode(bytes.NewReader(data))
		if err != nil {
			// Verified alone: verify names what is wrong with it.
			rep, err := invariants.VerifyAudited(bytes.NewReader(data), f.audit)
			f.items = append(f.items, verifyItem{label: p, rep: rep, err: err})
			continue
		}
		if other := f.logs[log.Info.ID]; other != nil {
			f.items = append(f.items, verifyItem{label: p, err: fmt.Errorf("session %s is also %s: a tree holds each session once", log.Info.ID, other.label)})
			continue
		}
		f.add(log.Info.ID, &treeLog{label: p, data: data, log: log})
		ids = append(ids, log.Info.ID)
	}
	for _, id := range ids {
		if p := f.logs[id].log.Info.Parent; p == nil || p.Call == "" || f.logs[p.ID] == nil {
			f.roots = append(f.roots, id)
		}
	}
	// Sessions that are each other's ancestors have no root: each is
	// one, so that every log given is verified.
	seen := f.seen()
	for _, id := range ids {
		if !seen[id] {
			f.roots = append(f.roots, id)
			tree, _ := session.BuildTree(f.infos, id)
			tree.Walk(func(n *session.Tree, _ int) { seen[n.Info.ID] = true })
		}
	}
	return nil
}

// seen returns the sessions the trees of the roots hold.
func (f *forest) seen() map[string]bool {
	seen := map[string]bool{}
	for _, r := range f.roots {
		if tree, err := session.BuildTree(f.infos, r); err == nil {
			tree.Walk(func(n *session.Tree, _ int) { seen[n.Info.ID] = true })
		}
	}
	return seen
}

// verify verifies every log of every tree, parents before their
// children, each once, and checks each parent's delegations against its
// children's logs.
func (f *forest) verify() []verifyItem {
	var out []verifyItem
	done := map[string]bool{}
	for _, root := range f.roots {
		tree, err := session.BuildTree(f.infos, root)
		if err != nil {
			out = append(out, verifyItem{label: root, err: err})
			continue
		}
		tree.Walk(func(n *session.Tree, _ int) {
			id := n.Info.ID
			if done[id] {
				return
			}
			done[id] = true
			l := f.logs[id]
			rep, err := invariants.VerifyAudited(bytes.NewReader(l.data), f.audit)
			if err != nil {
				out = append(out, verifyItem{label: l.label, err: err})
				return
			}
			children := map[string]*session.Log{}
			for _, c := range n.Children {
				children[c.Info.ID] = f.logs[c.Info.ID].log
			}
			errs, checked := session.CheckDelegations(l.log, children)
			for _, de := range errs {
				rule := treeRule
				if de.Rule != "" {
					rule = de.Rule
				}
				rep.Violations = append(rep.Violations, invariants.Violation{Rule: rule, Session: de.Session, Seq: de.Seq, Index: -1, Message: fmt.Sprintf("child %s: %s", de.Child, de.Msg)})
			}
			rep.Proven.DelegationsChecked = checked
			f.checkFork(l.log, rep)
			out = append(out, verifyItem{label: l.label, rep: rep})
		})
	}
	return out
}

// checkFork checks a fork against its parent's log, when the forest
// holds it, reporting a disagreement as an edge-mismatch.
func (f *forest) checkFork(fork *session.Log, rep *invariants.Report) {
	p := fork.Info.Parent
	if p == nil || p.Call != "" {
		return
	}
	parent := f.parents[p.ID]
	if l := f.logs[p.ID]; l != nil {
		parent = l.log
	}
	if parent == nil {
		return
	}
	rep.Proven.ForkChecked = true
	if fe := session.CheckFork(fork, parent); fe != nil {
		rep.Violations = append(rep.Violations, invariants.Violation{Rule: session.RuleEdgeMismatch, Session: fe.Fork, Seq: fe.Seq, Index: -1,
			Message: fmt.Sprintf("parent %s: %s", fe.Parent, fe.Msg)})
	}
}

// cmdReplayTree replays every session of the tree of id, parents first,
// each through cmdReplay (the replay of one log): a sub-agent's session is
// a log like any other, so the tree's replay is a loop over it.
func cmdReplayTree(ctx context.Context, e *env, cfg string, asJSON bool, id string) error {
	mgr, done, err := sessionsManager(e, cfg, true)
	if err != nil {
		return err
	}
	tree, err := session.LoadTree(ctx, mgr.Store(), id)
	done()
	if err != nil {
		return err
	}
	var ids []string
	tree.Walk(func(n *session.Tree, _ int) { ids = append(ids, n.Info.ID) })
	var first error
	for _, sid := range ids {
		if !asJSON {
			fmt.Fprintf(e.stdout, "session %s\n", sid)
		}
		if err := cmdReplay(ctx, e, cfg, asJSON, []string{sid}); err != nil && first == nil {
			first = err
		}
	}
	return first
}
