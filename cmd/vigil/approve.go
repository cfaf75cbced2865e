package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// decideOptions are the flags of `vigil approve` and `vigil deny`.
type decideOptions struct {
	cfg, by, reason string
	always, wait    bool
}

func newApproveCmd(e *env) *cobra.Command {
	var o decideOptions
	cmd := &cobra.Command{
		Use:   "approve ID [CALL...]",
		Short: "Allow tool calls a suspended session waits for, and resume it",
		Long: `Allow the named tool calls of session ID's suspended step (every call that
waits, when none is named). The decision is logged (approval/decision);
once every call of the step is decided, the turn resumes here: the allowed
calls run, the answer streams to stdout. A session whose calls are all
decided but did not run (its process ended) resumes with 'vigil approve ID'.

--always allows the calls for the rest of the session: a later call the
same rule asks about is allowed by that decision, logged as its own.`,
		Example: `  vigil sessions show 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A   # lists what waits
  vigil approve 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  vigil approve 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A call_1_1_0 --always`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeSessionIDs(e, false),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return cmdDecide(cmd.Context(), e, o, true, args[0], args[1:])
		}),
	}
	configFlag(cmd, &o.cfg)
	decideFlags(cmd, &o)
	cmd.Flags().BoolVar(&o.always, "always", false, "allow these calls for the rest of the session")
	cmd.Flags().StringVar(&o.reason, "reason", "", "why, for the log")
	return cmd
}

func newDenyCmd(e *env) *cobra.Command {
	var o decideOptions
	cmd := &cobra.Command{
		Use:   "deny ID [CALL...] --reason TEXT",
		Short: "Deny tool calls a suspended session waits for, and resume it",
		Long: `Deny the named tool calls of session ID's suspended step (every call that
waits, when none is named). The decision is logged; each denied call is
answered with an APPROVAL_DENIED result carrying the reason, which the
model sees, and once every call of the step is decided the turn resumes
here.`,
		Example: `  vigil deny 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A --reason "not on production"
  vigil deny 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A call_1_1_0 --reason "read the README instead"`,
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: completeSessionIDs(e, false),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return cmdDecide(cmd.Context(), e, o, false, args[0], args[1:])
		}),
	}
	configFlag(cmd, &o.cfg)
	decideFlags(cmd, &o)
	cmd.Flags().StringVar(&o.reason, "reason", "", "why, shown to the model")
	return cmd
}

func decideFlags(cmd *cobra.Command, o *decideOptions) {
	cmd.Flags().StringVar(&o.by, "by", "", "who decides, for the log (default: the local user's account name)")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait for a turn another process runs on the session")
}

// cmdDecide decides the calls of session id (every undecided one when
// calls is empty) and shows the resumed turn.
func cmdDecide(ctx context.Context, e *env, o decideOptions, allow bool, id string, calls []string) error {
	h, err := openHost(e, o.cfg)
	if err != nil {
		return err
	}
	defer h.close()
	pending, err := h.rt.Pending(ctx, id)
	if err != nil {
		return sessionError(id, nil, err)
	}
	if pending == nil {
		return fmt.Errorf("session %s waits for no decision: %w", id, session.ErrNotSuspended)
	}
	if len(calls) == 0 && pending.Ready() {
		// Decided, but the process that decided ended before the step
		// went on.
		return showDecided(e, h, id, func(v *turnView) (*vigil.Result, error) {
			return h.rt.Resume(ctx, id, v.chunk)
		})
	}
	if len(calls) == 0 {
		for _, c := range pending.Undecided() {
			calls = append(calls, c.Call.ID)
		}
	}
	d := vigil.Decision{Allow: allow, By: o.by, Reason: o.reason}
	if d.By == "" {
		d.By = localUser()
		fmt.Fprintf(e.stderr, "deciding as %s (the local user; --by names another)\n", d.By)
	} else {
		fmt.Fprintf(e.stderr, "deciding as %s (--by)\n", termSafe(d.By))
	}
	if o.always {
		d.Scope = session.ScopeSession
	}
	verb := "deny"
	if allow {
		verb = "allow"
	}
	for i, call := range calls {
		last := i == len(calls)-1
		err := showDecided(e, h, id, func(v *turnView) (*vigil.Result, error) {
			if c := pending.Find(call); c != nil {
				// What is decided, in full: the call, and under a
				// delegation the sub-agent's calls the decision decides.
				w := termWriter{e.stderr}
				fmt.Fprintf(w, "%s %s  %s %s\n", verb, call, c.Call.Name, oneLine(c.Call.Arguments, -1))
				printChildCalls(w, storeChildWaits(ctx, h.rt), id, *c, "  ")
			}
			res, err := h.rt.Decide(ctx, vigil.DecideOptions{Session: id, Call: call, Decision: d, Wait: o.wait, OnChunk: v.chunk})
			if res == nil && err == nil && last {
				// Calls of the step not named here still wait.
				if s, perr := h.rt.Pending(ctx, id); perr == nil && s != nil {
					printPending(e.stderr, id, s, storeChildWaits(ctx, h.rt))
				}
				return nil, suspendedError{agentloop.ErrSuspended}
			}
			return res, err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// showDecided runs a decision or resume that may run the rest of the
// turn, streaming it, and maps its outcome as `vigil run` does.
func showDecided(e *env, h *host, id string, fn func(*turnView) (*vigil.Result, error)) error {
	v := watchTurn(h.rt.Context(), h.status, id, true)
	if s, err := h.rt.Pending(context.Background(), id); err == nil && s != nil {
		v.knows(s.Calls)
	}
	res, err := fn(v)
	v.close()
	var se suspendedError
	if errors.As(err, &se) {
		return err
	}
	if s := suspensionOf(res); s != nil && errors.Is(err, vigil.ErrSuspended) {
		printPending(e.stderr, id, s, storeChildWaits(context.Background(), h.rt))
		return suspendedError{err}
	}
	if res == nil && err == nil {
		return nil
	}
	return turnError(res, sessionError(id, res, err))
}

// localUser names the person deciding at this terminal: the operating
// system's account of the process (not $USER, which anyone sets), else
// its uid.
func localUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}
