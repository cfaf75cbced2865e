package main

import (
	"context"
	"fmt"
	"os/user"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// cliPrincipal names who runs a command that deletes, for the process
// log: the operating system's user.
func cliPrincipal() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return "cli:" + u.Username
	}
	return "cli"
}

func newSessionsDeleteCmd(e *env) *cobra.Command {
	var cfg string
	var asJSON, tree bool
	cmd := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a session from the store, for good",
		Long: `Delete a session from the composition's store: its log, its queued, running
and finished jobs, its lease and its pending approvals. A turn running on it
(a worker's, in any process sharing the store) is cancelled first, and the
deletion waits up to 10s for it to end. A session with child sessions (its
sub-agents') is refused (exit 1) unless --tree deletes them with it; forks
are not children: they keep their own copy of what they inherited. Prints
the ids deleted, children first; --json prints {deleted: [ids]}. The
deletion is logged on stderr, naming the user who ran the command.`,
		Example: `  vigil sessions delete 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  vigil sessions delete 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A --tree`,
		Args:              exactArgs(1, "1 argument (a session id)"),
		ValidArgsFunction: completeSessionIDs(e, false),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			h, err := openStoreHost(e, cfg)
			if err != nil {
				return err
			}
			defer func() { _ = h.close() }()
			deleted, err := h.rt.DeleteSession(cmd.Context(), args[0], vigil.DeleteOptions{Tree: tree, By: cliPrincipal()})
			if err != nil {
				return err
			}
			return printDeleted(e, deleted, asJSON)
		}),
	}
	configFlag(cmd, &cfg)
	jsonFlag(cmd, &asJSON, "the ids deleted")
	cmd.Flags().BoolVar(&tree, "tree", false, "delete the session's child sessions too")
	return cmd
}

func newSessionsPruneCmd(e *env) *cobra.Command {
	var cfg string
	var asJSON, dryRun bool
	var maxAge time.Duration
	cmd := &cobra.Command{
		Use:   "prune",
		Short: "Delete the sessions past the store's retention (for cron)",
		Long: `Delete every session whose last event is older than the store's retention
(retention: {max_age: 720h} in the store entry of plugins.yaml), or
--max-age. A session with queued or running jobs is kept, and a parent
until its child sessions go. vigil serve does this on its own every hour;
this command is for a store served by no vigil serve, from cron. Prints
the ids deleted; --dry-run only prints those it would delete.`,
		Example: `  vigil sessions prune
  vigil sessions prune --max-age 2160h --dry-run`,
		Args: noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			if maxAge < 0 {
				return usagef("--max-age must be 0 or more")
			}
			h, err := openStoreHost(e, cfg)
			if err != nil {
				return err
			}
			defer func() { _ = h.close() }()
			ret := h.rt.Retention()
			if maxAge > 0 {
				ret.MaxAge = maxAge
			}
			if ret.MaxAge <= 0 {
				return usagef("no retention: give the store entry retention: {max_age: …}, or --max-age")
			}
			ctx := cmd.Context()
			var ids []string
			if dryRun {
				mgr, err := h.rt.Manager()
				if err != nil {
					return err
				}
				ids, err = session.PruneCandidates(ctx, mgr.Store(), ret, time.Now())
				if perr := printDeleted(e, ids, asJSON); perr != nil {
					return perr
				}
				return err
			}
			ids, err = h.rt.Prune(ctx, ret, time.Now(), cliPrincipal()+" (retention)")
			if perr := printDeleted(e, ids, asJSON); perr != nil {
				return perr
			}
			return err
		}),
	}
	configFlag(cmd, &cfg)
	jsonFlag(cmd, &asJSON, "the ids deleted")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be deleted, delete nothing")
	cmd.Flags().DurationVar(&maxAge, "max-age", 0, "delete sessions idle longer than this (default: the store's retention)")
	return cmd
}

func printDeleted(e *env, ids []string, asJSON bool) error {
	if asJSON {
		if ids == nil {
			ids = []string{}
		}
		return printJSON(e.stdout, map[string]any{"deleted": ids})
	}
	for _, id := range ids {
		if _, err := fmt.Fprintln(e.stdout, id); err != nil {
			return err
		}
	}
	return nil
}

// pruneEvery is how often vigil serve applies the store's retention.
const pruneEvery = time.Hour

// keepRetention applies the store's retention now and then every
// interval until ctx is done, logging what it deleted; a store without
// retention makes it return at once.
func keepRetention(ctx context.Context, rt *vigil.Runtime, log hclog.Logger, every time.Duration) {
	ret := rt.Retention()
	if ret.MaxAge <= 0 {
		return
	}
	log.Info("deleting sessions past the store's retention", "max_age", ret.MaxAge, "every", every)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		deleted, err := rt.Prune(ctx, ret, time.Now(), "retention")
		if err != nil && ctx.Err() == nil {
			log.Error("applying the retention failed for some sessions", "error", err)
		}
		if len(deleted) > 0 {
			log.Info("deleted the sessions past the retention", "count", len(deleted))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
