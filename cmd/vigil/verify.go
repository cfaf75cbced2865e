package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

func newVerifyCmd(e *env) *cobra.Command {
	var cfg string
	var asJSON, tree bool
	var keys, anchors []string
	cmd := &cobra.Command{
		Use:   "verify [--key PUBKEY [--anchor FILE]...] FILE|ID...",
		Short: "Check stored session logs offline",
		Long: `Run the invariants' rules over stored logs: each argument is a log file, or
the id of a session in the store of the composition -c names. Each violation
prints on stdout as FILE|ID: RULE seq=N: message; a log that ends inside a
turn prints FILE|ID: turn N is open: the log ends at seq S (…); then one
line per log says what it proves:

  FILE|ID: VERDICT: N events, N steps, N requests re-derived (and N
  one-shots, when there are), N digests matched, N approvals, N delegations
  (N checked against the child's log); sha256 HEX; vigil VERSION

The verdict is valid (every rule holds and every turn is closed), open (every
rule holds, but the log ends inside a turn: a turn waiting for approval
decisions, a crash nothing repaired yet, a session still being written, or a
log cut short; what it holds is proven, not that it is the whole session) or
invalid. A valid log also prints "FILE|ID: ok (N events)" on stderr; an
unreadable one its error on stderr. --json prints an array of {log, session,
verdict, sha256, verifier, events, proven, open, violations, error}: the
report to hand on. One-shots an older build logged without their
instruction cannot be re-derived: a note on stderr and oneshots_underived in
--json list them (not violations).

--tree verifies each session with every sub-agent session under it (see
vigil sessions tree) and checks each delegation (rule delegation): the
parent's tool/result answers the call the child's header names and its
content is the child's final assistant message; each child names a tool/call
of the parent that no other child names; its first user message is the task
that call passed. A fork is checked against its parent's log when it is at
hand (in the store, or among the files): the root its header binds is the
parent's tree at the seq it forked, and its inherited records are the
parent's (rule edge-mismatch; fork_checked in --json). Its arguments are
session ids (the tree in the store) or exported log files and directories
of them (every tree among them, each log labelled with its file).

--key checks every signed checkpoint (integrity/checkpoint) with the
auditor's public key (as vigil keys generate printed it, or a file holding
it; repeat for several): its signature, and that its size, root and header
hash state the log before it. One line per log then says what is covered:

  FILE|ID: signed: records 0-73 covered by NAME; 0 records after the last checkpoint

and each finding prints as FILE|ID: KIND [seq=N]: message, KIND one of
unsigned, key-mismatch, bad-signature, checkpoint-mismatch,
missing-checkpoint, unsigned-tail, broken-anchor; any finding makes the log
invalid. When the composition's store sets signing.require (read for a
session id, or for files with -c), a log with no checkpoint is also
missing-checkpoint, and verify without --key is refused. --anchor FILE holds a checkpoint note kept elsewhere (a turn's
receipt): the log must extend it, so a log cut back to an earlier checkpoint
or rewritten and re-signed is found. Without --key a log is reported
unsigned, or with its checkpoints unchecked.

Exit 0 when every log is valid; 1 when one has a violation or cannot be
read; else 4 when an argument is neither a file nor a stored session; else 3
when a log ends inside a turn.`,
		Example: `  vigil verify .vigil/sessions/*.jsonl
  vigil verify 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A --json
  vigil verify --tree 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  vigil verify --tree exported/`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("verify needs a log file or session id")
			}
			return nil
		},
		ValidArgsFunction: completeSessionIDs(e, true),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			audit, err := auditOf(keys, anchors)
			if err != nil {
				return err
			}
			return cmdVerify(cmd.Context(), e, cfg, asJSON, tree, audit, args)
		}),
	}
	configFlag(cmd, &cfg)
	cmd.Flags().StringArrayVar(&keys, "key", nil, "check the signed checkpoints with this public key (or a file holding it); repeatable")
	cmd.Flags().StringArrayVar(&anchors, "anchor", nil, "a file holding a signed checkpoint the log must extend (a receipt); repeatable, needs --key")
	cmd.Flags().BoolVar(&tree, "tree", false, "verify each session with its sub-agent sessions and their delegations")
	jsonFlag(cmd, &asJSON, "the reports")
	return cmd
}

// verifyReport is one element of `verify --json`: what verifying one log
// proved, for an auditor to hand on.
type verifyReport struct {
	Log     string `json:"log"`
	Session string `json:"session,omitempty"`
	// Verdict is valid, open or invalid (invariants.Report.Verdict), or
	// unreadable with Error.
	Verdict string `json:"verdict"`
	// SHA256 is the hash of the bytes verified: the file, or the log of
	// a stored session as exported.
	SHA256 string `json:"sha256,omitempty"`
	// Verifier is the version of the vigil that verified it.
	Verifier   string                 `json:"verifier"`
	Events     int                    `json:"events"`
	Proven     *invariants.Proven     `json:"proven,omitempty"`
	Open       *invariants.OpenTurn   `json:"open,omitempty"`
	Violations []invariants.Violation `json:"violations"`
	// OneshotsUnderived are the seqs of one-shots an older build logged
	// without their instruction: not re-derived, and not violations.
	OneshotsUnderived []int64 `json:"oneshots_underived,omitempty"`
	// Integrity is "unsigned", "unchecked" (checkpoints, no --key) or
	// "checked" (then Checked says what --key established).
	Integrity string                `json:"integrity,omitempty"`
	Checked   *invariants.Integrity `json:"checked,omitempty"`
	Error     string                `json:"error,omitempty"`
}

// verdictUnreadable is the verdict of a log that could not be read.
const verdictUnreadable = "unreadable"

// verifyItem is one log verified: its label (the argument, or for
// --tree the session id or file), its report or why there is none.
type verifyItem struct {
	label string
	rep   *invariants.Report
	err   error
}

// cmdVerify runs the append rules and request-digest over stored logs,
// each line labelled with the argument it is about.
func cmdVerify(ctx context.Context, e *env, cfg string, asJSON, tree bool, audit *invariants.Audit, args []string) error {
	var h *host
	defer func() {
		if h != nil {
			_ = h.close()
		}
	}()
	required, err := signingRequired(e, cfg, &h, args)
	if err != nil {
		return err
	}
	if required {
		if audit == nil {
			return usagef("the composition's store requires signed sessions (signing.require): verify needs --key")
		}
		audit.Require = true
	}
	var items []verifyItem
	if tree {
		if items, err = verifyTrees(ctx, e, cfg, &h, args, audit); err != nil {
			return err
		}
	} else {
		for _, arg := range args {
			rep, err := verifyOne(ctx, e, cfg, &h, arg, audit)
			items = append(items, verifyItem{arg, rep, err})
		}
	}
	failed, missing, open := false, false, false
	reports := make([]verifyReport, 0, len(items))
	verifier := "vigil " + versionString()
	for _, it := range items {
		if it.err != nil {
			var ce *configError
			if errors.As(it.err, &ce) {
				return it.err
			}
			if exitCode(ranError{it.err}) == exitNotFound {
				missing = true
			} else {
				failed = true
			}
			// An error, prefixed as report prefixes the others; the
			// label says which of the logs it is about.
			fmt.Fprintf(e.stderr, "vigil verify: %s: %v\n", it.label, it.err)
			reports = append(reports, verifyReport{Log: it.label, Verdict: verdictUnreadable, Verifier: verifier, Violations: []invariants.Violation{}, Error: it.err.Error()})
			continue
		}
		rep := it.rep
		verdict := rep.Verdict()
		failed = failed || verdict == invariants.VerdictInvalid
		open = open || verdict == invariants.VerdictOpen
		if asJSON {
			proven := rep.Proven
			reports = append(reports, verifyReport{Log: it.label, Session: rep.Session, Verdict: verdict, SHA256: rep.SHA256, Verifier: verifier,
				Events: rep.Events, Proven: &proven, Open: rep.Open, Violations: nonNil(rep.Violations), OneshotsUnderived: rep.OneshotsUnderived,
				Integrity: integrityWord(rep), Checked: rep.Integrity})
			continue
		}
		for _, v := range rep.Violations {
			fmt.Fprintf(e.stdout, "%s: %s\n", it.label, v.String())
		}
		if rep.Open != nil {
			fmt.Fprintf(e.stdout, "%s: %s\n", it.label, rep.Open)
		}
		printIntegrity(e, it.label, rep)
		p := rep.Proven
		oneshots := ""
		if p.Oneshots > 0 {
			oneshots = fmt.Sprintf(" (and %d one-shots)", p.Oneshots)
		}
		fmt.Fprintf(e.stdout, "%s: %s: %d events, %d steps, %d requests re-derived%s, %d digests matched, %d approvals, %d delegations (%d checked against the child's log); sha256 %s; %s\n",
			it.label, verdict, rep.Events, p.Steps, p.Requests, oneshots, p.DigestsMatched, p.Approvals, p.Delegations, p.DelegationsChecked, rep.SHA256, verifier)
		if verdict == invariants.VerdictValid {
			fmt.Fprintf(e.stderr, "%s: ok (%d events)\n", it.label, rep.Events)
		}
		if n := len(rep.OneshotsUnderived); n > 0 {
			fmt.Fprintf(e.stderr, "%s: note: %d one-shot(s) (seq %s) logged by an older build without their instruction: their requests are not in the log, their digests not checked\n",
				it.label, n, joinSeqs(rep.OneshotsUnderived))
		}
	}
	if asJSON {
		if err := printJSON(e.stdout, reports); err != nil {
			return err
		}
	}
	switch {
	case failed:
		return silentError{exitFailed}
	case missing:
		return silentError{exitNotFound}
	case open:
		// Nothing is wrong with what the log holds, but it is not a
		// complete session: exit 3, as for a turn that waits.
		return silentError{exitSuspended}
	}
	return nil
}

// verifyOne verifies a log file, or the log of a session id in the store
// of the composition (opened on first need).
func verifyOne(ctx context.Context, e *env, cfg string, h **host, arg string, audit *invariants.Audit) (*invariants.Report, error) {
	data, err := readLog(ctx, e, cfg, h, arg)
	if err != nil {
		return nil, err
	}
	return invariants.VerifyAudited(bytes.NewReader(data), audit)
}

// exportSession returns the stored JSONL bytes of session id.
func exportSession(ctx context.Context, e *env, cfg string, h **host, id string) ([]byte, error) {
	mgr, err := storedSessions(e, cfg, h)
	if err != nil {
		return nil, err
	}
	log, err := mgr.Store().Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return encodeLog(log.Info, log.Records), nil
}

// encodeLog renders a log in the JSONL format: header line, then records.
func encodeLog(info session.Info, records []session.Record) []byte {
	size := 128
	for _, r := range records {
		size += r.LineLen()
	}
	out := session.AppendHeaderLine(make([]byte, 0, size), info)
	for _, r := range records {
		out = r.AppendLine(out)
	}
	return out
}

// joinSeqs renders seqs as "3, 17".
func joinSeqs(seqs []int64) string {
	parts := make([]string, len(seqs))
	for i, s := range seqs {
		parts[i] = strconv.FormatInt(s, 10)
	}
	return strings.Join(parts, ", ")
}

// signingRequired reports whether the composition's store requires
// signed sessions (its signing.require), when verify reads the
// composition: for a session id, or when -c names it. Log files alone,
// without -c, are held to no composition.
func signingRequired(e *env, cfg string, h **host, args []string) (bool, error) {
	storedID := func(arg string) bool {
		_, err := os.Stat(arg)
		return err != nil && session.ValidID(arg)
	}
	if cfg == "" && !slices.ContainsFunc(args, storedID) {
		return false, nil
	}
	if *h == nil {
		var err error
		if *h, err = openStoreHost(e, cfg); err != nil {
			return false, err
		}
	}
	signing, err := live.SigningService.Get((*h).rt.Context())
	if errors.Is(err, bus.ErrServiceMissing) {
		return false, nil
	}
	return signing.Require, err
}
