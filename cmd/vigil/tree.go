package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
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

// verifyTree verifies every session of the tree of id: each log by the
// invariants' rules, and each delegation's tool/result against the child
// it names. The reports are labelled with the sessions' ids.
func verifyTree(ctx context.Context, e *env, cfg string, h **host, id string) ([]string, []*invariants.Report, error) {
	if *h == nil {
		var err error
		if *h, err = openStoreHost(e, cfg); err != nil {
			return nil, nil, err
		}
	}
	mgr, err := service(*h, live.Sessions)
	if err != nil {
		return nil, nil, err
	}
	tree, err := session.LoadTree(ctx, mgr.Store(), id)
	if err != nil {
		return nil, nil, err
	}
	var (
		ids     []string
		reports []*invariants.Report
		walkErr error
	)
	tree.Walk(func(n *session.Tree, _ int) {
		if walkErr != nil {
			return
		}
		rep, err := verifyOne(ctx, e, cfg, h, n.Info.ID)
		if err != nil {
			walkErr = fmt.Errorf("%s: %w", n.Info.ID, err)
			return
		}
		parent, err := mgr.Store().Load(ctx, n.Info.ID)
		if err != nil {
			walkErr = fmt.Errorf("%s: %w", n.Info.ID, err)
			return
		}
		children := map[string]*session.Log{}
		for _, c := range n.Children {
			log, err := mgr.Store().Load(ctx, c.Info.ID)
			if err != nil {
				walkErr = fmt.Errorf("%s: %w", c.Info.ID, err)
				return
			}
			children[c.Info.ID] = log
		}
		for _, de := range session.CheckDelegations(parent, children) {
			rep.Violations = append(rep.Violations, invariants.Violation{Rule: treeRule, Session: de.Session, Seq: de.Seq, Index: -1, Message: fmt.Sprintf("child %s: %s", de.Child, de.Msg)})
		}
		ids = append(ids, n.Info.ID)
		reports = append(reports, rep)
	})
	return ids, reports, walkErr
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
