package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil"
	"github.com/vigil-run/vigil/session"
)

// reconcileOptions are the flags of `vigil reconcile`.
type reconcileOptions struct {
	cfg, by, result, failed string
	wait, asJSON            bool
}

func newReconcileCmd(e *env) *cobra.Command {
	var o reconcileOptions
	cmd := &cobra.Command{
		Use:   "reconcile ID CALL --result FILE | --failed REASON",
		Short: "Log the real outcome of a tool call whose outcome is unknown",
		Long: `Log the real outcome of tool call CALL of session ID, whose result is
TOOL_OUTCOME_UNKNOWN (the process died while the tool ran), as you found
it: --result FILE holds what the call returned (- reads stdin), --failed
REASON says it failed and why (logged as error TOOL_ERROR). The record
(tool/reconcile) names who reconciled it; from then on the model is shown
the outcome, after the unknown result. A call is reconciled once, and only
between turns. 'vigil sessions show ID' lists the calls whose outcome is
unknown.`,
		Example: `  vigil sessions show 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A   # lists unknown outcomes
  vigil reconcile 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A call_1_1_0 --result refund.json
  vigil reconcile 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A call_1_1_0 --failed "no refund was made"`,
		Args:              cobra.ExactArgs(2),
		ValidArgsFunction: completeSessionIDs(e, false),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			return cmdReconcile(cmd.Context(), e, o, cmd.Flags().Changed("result"), cmd.Flags().Changed("failed"), args[0], args[1])
		}),
	}
	configFlag(cmd, &o.cfg)
	cmd.Flags().StringVar(&o.result, "result", "", "a file holding what the call returned (- for stdin)")
	cmd.Flags().StringVar(&o.failed, "failed", "", "the call failed: why, shown to the model")
	cmd.MarkFlagsMutuallyExclusive("result", "failed")
	cmd.MarkFlagsOneRequired("result", "failed")
	cmd.Flags().StringVar(&o.by, "by", "", "who reconciles, for the log (default: the local user's account name)")
	cmd.Flags().BoolVar(&o.wait, "wait", false, "wait for a turn another process runs on the session")
	jsonFlag(cmd, &o.asJSON, "the logged outcome")
	return cmd
}

// reconciled is what `vigil reconcile --json` prints.
type reconciled struct {
	Session string                `json:"session"`
	Call    string                `json:"call"`
	Outcome session.ToolReconcile `json:"outcome"`
}

func cmdReconcile(ctx context.Context, e *env, o reconcileOptions, hasResult, hasFailed bool, id, call string) error {
	out := vigil.Reconciliation{By: o.by, Wait: o.wait}
	switch {
	case hasFailed && o.failed == "":
		return usagef("--failed needs a reason")
	case hasFailed:
		out.Failed = o.failed
	case hasResult:
		text, err := readResult(e, o.result)
		if err != nil {
			return err
		}
		out.Result = text
	}
	if out.By == "" {
		out.By = localUser()
		fmt.Fprintf(e.stderr, "reconciling as %s (the local user; --by names another)\n", out.By)
	} else {
		fmt.Fprintf(e.stderr, "reconciling as %s (--by)\n", out.By)
	}
	h, err := openHost(e, o.cfg)
	if err != nil {
		return err
	}
	defer h.close()
	if err := h.rt.Reconcile(ctx, id, call, out); err != nil {
		return sessionError(id, nil, err)
	}
	log, err := h.rt.Session(ctx, id)
	if err != nil {
		return err
	}
	rec, _, ok := session.Reconciled(log.Records, call)
	if !ok {
		return fmt.Errorf("session %s: the reconcile of %s is not in the log", id, call)
	}
	if o.asJSON {
		return printJSON(e.stdout, reconciled{Session: id, Call: call, Outcome: rec})
	}
	fmt.Fprintf(e.stdout, "reconciled %s", call)
	if rec.Name != "" {
		fmt.Fprintf(e.stdout, "  %s", rec.Name)
	}
	if rec.Error != nil {
		fmt.Fprintf(e.stdout, ": failed: %s\n", oneLine(rec.Error.Message, 100))
	} else {
		fmt.Fprintf(e.stdout, ": returned %s\n", oneLine(rec.Content, 100))
	}
	return nil
}

// readResult reads the file of --result (- is stdin). Its bytes are
// logged as text: what is not UTF-8 is held as U+FFFD, as every record's
// text is; the command says so rather than change it silently.
func readResult(e *env, path string) (string, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(e.stdin)
	} else {
		data, err = os.ReadFile(path)
	}
	if err != nil {
		return "", fmt.Errorf("--result: %w", err)
	}
	if !utf8.Valid(data) {
		fmt.Fprintf(e.stderr, "--result %s is not valid UTF-8: its invalid bytes are logged as U+FFFD\n", path)
	}
	return string(data), nil
}
