package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

func newSessionsCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sessions",
		Short: "List, show, fork, export, import, follow, delete sessions and show their trees",
		Long: `Inspect the sessions of the composition's store. list, show, export, tail and
tree only read the store: they apply only the store entries (store/…) of
plugins.yaml, so a variable another entry needs (a provider's API key) need
not be set for them, and they create nothing.`,
		Example: `  vigil sessions list
  vigil sessions show 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A
  vigil sessions fork 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A --at 32
  vigil sessions export 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A | vigil sessions import -c pg.yaml`,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) > 0 {
				return fmt.Errorf("unknown sessions subcommand %q (list, show, fork, export, import, tail, tree, delete, prune)", args[0])
			}
			return nil
		},
		// No subcommand: the usage on stderr, as a usage error (like vigil).
		RunE: func(cmd *cobra.Command, _ []string) error {
			cmd.SetOut(e.stderr)
			_ = cmd.Usage()
			return ranError{silentError{exitUsage}}
		},
	}
	cmd.AddCommand(newSessionsListCmd(e), newSessionsShowCmd(e), newSessionsForkCmd(e),
		newSessionsExportCmd(e), newSessionsImportCmd(e), newSessionsTailCmd(e), newSessionsTreeCmd(e),
		newSessionsDeleteCmd(e), newSessionsPruneCmd(e))
	return cmd
}

// sessionsManager opens the composition cfg names (only its store when
// readOnly) and returns its session manager and the host to close.
func sessionsManager(e *env, cfg string, readOnly bool) (*live.Manager, func(), error) {
	open := openHost
	if readOnly {
		open = openStoreHost
	}
	h, err := open(e, cfg)
	if err != nil {
		return nil, nil, err
	}
	mgr, err := service(h, live.Sessions)
	if err != nil {
		_ = h.close()
		return nil, nil, err
	}
	return mgr, func() { _ = h.close() }, nil
}

func newSessionsListCmd(e *env) *cobra.Command {
	var cfg string
	var asJSON, strict bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the stored sessions",
		Long: `List every readable session of the store: id, creation time, turns, events
and the session it was forked from. Each unreadable one is named on stderr
with its error; only with --strict does that fail the command (exit 1).
--json prints an array of {id, created (RFC 3339), parent, events, turns,
usage, turn_usage}: usage is {input, output} tokens as the steps logged
them, with cost (USD) when the budget entry of the composition has a
price for every model used (else unpriced names the others); turn_usage
is the same per turn, with its number.`,
		Example: `  vigil sessions list
  vigil sessions list --json | jq -r '.[].id'`,
		Aliases: []string{"ls"},
		Args:    noArgs,
		RunE: action(func(cmd *cobra.Command, _ []string) error {
			mgr, done, err := sessionsManager(e, cfg, true)
			if err != nil {
				return err
			}
			defer done()
			prices, err := pricesOf(e, cfg)
			if err != nil {
				return err
			}
			return listSessions(cmd.Context(), e, mgr, prices, asJSON, strict)
		}),
	}
	configFlag(cmd, &cfg)
	jsonFlag(cmd, &asJSON, "the list")
	cmd.Flags().BoolVar(&strict, "strict", false, "exit 1 when a stored session cannot be read")
	return cmd
}

func newSessionsShowCmd(e *env) *cobra.Command {
	var cfg string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a session's turns, steps, messages and tool calls",
		Long: `Render a session's log readably, one line per event that matters: turns,
steps, messages, tool calls and results, each turn's end with its token
usage, and the session's usage last; cost too when the budget entry of
the composition prices the models used (prices: {MODEL: {input, output}},
USD per million tokens). --json prints the log itself (JSONL, as export
does).`,
		Example:           "  vigil sessions show 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A\n  vigil sessions show exported.jsonl",
		Args:              exactArgs(1, "1 argument (a session id or a log file)"),
		ValidArgsFunction: completeSessionIDs(e, false),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var log *session.Log
			var err error
			switch st, serr := os.Stat(args[0]); {
			case serr == nil && !st.IsDir():
				// A log file, as verify, replay and trace take one; a
				// file never needs the composition.
				if log, err = traceLog(cmd.Context(), e, cfg, nil, args[0]); err != nil {
					err = fmt.Errorf("%s: %w", args[0], err)
				}
			case !session.ValidID(args[0]):
				err = notFoundf("%s: no such file or session id", args[0])
			default:
				log, err = loadStored(cmd.Context(), e, cfg, args[0])
			}
			if err != nil {
				return err
			}
			if asJSON {
				_, err = e.stdout.Write(encodeLog(log.Info, log.Records))
				return err
			}
			prices, err := pricesOf(e, cfg)
			if err != nil {
				return err
			}
			return showSession(e.stdout, log.Info, log.Records, prices)
		}),
	}
	configFlag(cmd, &cfg)
	jsonFlag(cmd, &asJSON, "the log (JSONL)")
	return cmd
}

func newSessionsForkCmd(e *env) *cobra.Command {
	var cfg string
	var asJSON bool
	var at int64
	cmd := &cobra.Command{
		Use:   "fork ID --at SEQ",
		Short: "Start a new session from a session's log up to a seq",
		Long: `Create a session that inherits the events of ID up to and including seq SEQ
(a turn boundary: a fork inside an open turn is refused, exit 1) and print
its id. --json prints {id, parent, at}.`,
		Example:           "  vigil sessions fork 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A --at 32",
		Args:              exactArgs(1, "1 argument (a session id)"),
		ValidArgsFunction: completeSessionIDs(e, false),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			mgr, done, err := sessionsManager(e, cfg, false)
			if err != nil {
				return err
			}
			defer done()
			ctx := cmd.Context()
			s, err := mgr.Fork(ctx, args[0], at)
			if err != nil {
				return err
			}
			if err := s.Flush(ctx); err != nil {
				return err
			}
			if asJSON {
				return printJSON(e.stdout, map[string]any{"id": s.ID(), "parent": args[0], "at": at})
			}
			_, err = fmt.Fprintln(e.stdout, s.ID())
			return err
		}),
	}
	configFlag(cmd, &cfg)
	jsonFlag(cmd, &asJSON, "the new session")
	cmd.Flags().Int64Var(&at, "at", 0, "the last seq the fork inherits (required)")
	_ = cmd.MarkFlagRequired("at")
	return cmd
}

func newSessionsExportCmd(e *env) *cobra.Command {
	var cfg string
	cmd := &cobra.Command{
		Use:   "export ID",
		Short: "Print a session's log in the JSONL format",
		Long: `Print the stored log of a session, byte for byte as the JSONL store keeps
it (docs/log-format.md), whichever store holds it: the input of import and
verify.`,
		Example: `  vigil sessions export 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A > s.jsonl
  vigil sessions export 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A | vigil sessions import -c pg.yaml`,
		Args:              exactArgs(1, "1 argument (a session id)"),
		ValidArgsFunction: completeSessionIDs(e, false),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			log, err := loadStored(cmd.Context(), e, cfg, args[0])
			if err != nil {
				return err
			}
			_, err = e.stdout.Write(encodeLog(log.Info, log.Records))
			return err
		}),
	}
	configFlag(cmd, &cfg)
	return cmd
}

func newSessionsImportCmd(e *env) *cobra.Command {
	var cfg string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "import [FILE]",
		Short: "Store session logs read from a file or stdin",
		Long: `Read session logs in the JSONL format (what export prints; several may follow
one another) from FILE, or stdin when FILE is absent or -, and store each
under its own id, header and records unchanged. Prints each imported id
(--json: an array of them). A session the store already has is not
imported; a torn last line is dropped with a warning; every log that can be
imported is, and the others fail the command (exit 1).`,
		Example: "  vigil sessions export 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A | vigil sessions import -c pg.yaml",
		Args:    cobra.MaximumNArgs(1),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			var in io.Reader = e.stdin
			name := "stdin"
			if len(args) == 1 && args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return err
				}
				defer f.Close()
				in, name = f, args[0]
			}
			mgr, done, err := sessionsManager(e, cfg, false)
			if err != nil {
				return err
			}
			defer done()
			// An error names the input, as verify's names its file.
			named := func(err error) error {
				if errors.Is(err, session.ErrCorrupt) || errors.Is(err, session.ErrVersion) || errors.Is(err, session.ErrUnknownType) {
					return fmt.Errorf("%s: %w", name, err)
				}
				return err
			}
			if !asJSON {
				return named(sessionsImport(cmd.Context(), e, mgr, in))
			}
			var ids bytes.Buffer
			je := *e
			je.stdout = &ids
			err = named(sessionsImport(cmd.Context(), &je, mgr, in))
			if jerr := printJSON(e.stdout, nonNil(strings.Fields(ids.String()))); jerr != nil && err == nil {
				err = jerr
			}
			return err
		}),
	}
	configFlag(cmd, &cfg)
	jsonFlag(cmd, &asJSON, "the imported ids")
	return cmd
}

func newSessionsTailCmd(e *env) *cobra.Command {
	var cfg string
	cmd := &cobra.Command{
		Use:   "tail ID",
		Short: "Print a session's log and follow it as it grows",
		Long: `Print the log of a session in the JSONL format, then each event as it is
appended, by this process or any other, until Ctrl-C. store/postgres
follows with LISTEN/NOTIFY; other stores are read again every 250ms.`,
		Example:           "  vigil sessions tail 01JD8XKQ4G0W6Q1Y3T5V7X9Z0A",
		Args:              exactArgs(1, "1 argument (a session id)"),
		ValidArgsFunction: completeSessionIDs(e, false),
		RunE: action(func(cmd *cobra.Command, args []string) error {
			mgr, done, err := sessionsManager(e, cfg, true)
			if err != nil {
				return err
			}
			defer done()
			return sessionsTail(cmd.Context(), e, mgr, args[0])
		}),
	}
	configFlag(cmd, &cfg)
	return cmd
}

// printJSON writes v indented, as every --json output is.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// nonNil returns s, or an empty slice for nil: JSON lists print [] rather
// than null.
func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// loadStored loads session id's log from the store of cfg's composition,
// applying only its store entries.
func loadStored(ctx context.Context, e *env, cfg, id string) (*session.Log, error) {
	mgr, done, err := sessionsManager(e, cfg, true)
	if err != nil {
		return nil, err
	}
	defer done()
	return mgr.Store().Load(ctx, id)
}
