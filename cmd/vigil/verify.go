package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/invariants"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

func newVerifyCmd(e *env) *cobra.Command {
	var cfg string
	var asJSON, tree bool
	cmd := &cobra.Command{
		Use:   "verify FILE|ID...",
		Short: "Check stored session logs offline",
		Long: `Run the invariants' rules over stored logs: each argument is a log file, or
the id of a session in the store of the composition -c names. Each violation
prints on stdout as FILE|ID: RULE seq=N: message; a valid log prints
"FILE|ID: ok (N events)" on stderr; an unreadable one its error on stderr.
--json prints an array of {log, session, events, violations, error}.

--tree ID… verifies the session and every sub-agent session under it (see
vigil sessions tree), each labelled with its id, and checks each delegation:
the parent's tool/result answers the call the child's header names, and its
content is the child's final assistant message (rule delegation).

Exit 0 when every log is valid, 1 when one has a violation or cannot be read,
else 4 when an argument is neither a file nor a stored session.`,
		Example: `  vigil verify .vigil/sessions/*.jsonl
  vigil verify 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A --json
  vigil verify --tree 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) == 0 {
				return fmt.Errorf("verify needs a log file or session id")
			}
			return nil
		},
		ValidArgsFunction: completeSessionIDs(e, true),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return cmdVerify(cmd.Context(), e, cfg, asJSON, tree, args)
		}),
	}
	configFlag(cmd, &cfg)
	cmd.Flags().BoolVar(&tree, "tree", false, "verify each session with its sub-agent sessions and their delegations")
	jsonFlag(cmd, &asJSON, "the reports")
	return cmd
}

// verifyReport is one element of `verify --json`.
type verifyReport struct {
	Log        string                 `json:"log"`
	Session    string                 `json:"session,omitempty"`
	Events     int                    `json:"events"`
	Violations []invariants.Violation `json:"violations"`
	Error      string                 `json:"error,omitempty"`
}

// cmdVerify runs the append rules and request-digest over stored logs,
// each line labelled with the argument it is about.
func cmdVerify(ctx context.Context, e *env, cfg string, asJSON, tree bool, args []string) error {
	var h *host
	defer func() {
		if h != nil {
			_ = h.close()
		}
	}()
	failed, missing := false, false
	reports := make([]verifyReport, 0, len(args))
	type item struct {
		arg string
		rep *invariants.Report
		err error
	}
	var items []item
	for _, arg := range args {
		if !tree {
			rep, err := verifyOne(ctx, e, cfg, &h, arg)
			items = append(items, item{arg, rep, err})
			continue
		}
		if !session.ValidID(arg) {
			items = append(items, item{arg: arg, err: notFoundf("--tree takes session ids")})
			continue
		}
		ids, reps, err := verifyTree(ctx, e, cfg, &h, arg)
		for i := range ids {
			items = append(items, item{ids[i], reps[i], nil})
		}
		if err != nil {
			items = append(items, item{arg: arg, err: err})
		}
	}
	for _, it := range items {
		arg, rep, err := it.arg, it.rep, it.err
		if err != nil {
			var ce *configError
			if errors.As(err, &ce) {
				return err
			}
			if exitCode(ranError{err}) == exitNotFound {
				missing = true
			} else {
				failed = true
			}
			fmt.Fprintf(e.stderr, "%s: %v\n", arg, err)
			reports = append(reports, verifyReport{Log: arg, Violations: []invariants.Violation{}, Error: err.Error()})
			continue
		}
		if len(rep.Violations) > 0 {
			failed = true
		}
		if asJSON {
			reports = append(reports, verifyReport{Log: arg, Session: rep.Session, Events: rep.Events, Violations: nonNil(rep.Violations)})
			continue
		}
		for _, v := range rep.Violations {
			fmt.Fprintf(e.stdout, "%s: %s\n", arg, v.String())
		}
		if len(rep.Violations) == 0 {
			fmt.Fprintf(e.stderr, "%s: ok (%d events)\n", arg, rep.Events)
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
	}
	return nil
}

// verifyOne verifies a log file, or the log of a session id in the store
// of the composition (opened on first need).
func verifyOne(ctx context.Context, e *env, cfg string, h **host, arg string) (*invariants.Report, error) {
	if st, err := os.Stat(arg); err == nil && !st.IsDir() {
		return invariants.VerifyFile(arg)
	}
	if !session.ValidID(arg) {
		return nil, notFoundf("no such file or session id")
	}
	data, err := exportSession(ctx, e, cfg, h, arg)
	if err != nil {
		return nil, err
	}
	return invariants.Verify(bytes.NewReader(data))
}

// exportSession returns the stored JSONL bytes of session id.
func exportSession(ctx context.Context, e *env, cfg string, h **host, id string) ([]byte, error) {
	if *h == nil {
		var err error
		if *h, err = openStoreHost(e, cfg); err != nil {
			return nil, err
		}
	}
	mgr, err := service(*h, live.Sessions)
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
