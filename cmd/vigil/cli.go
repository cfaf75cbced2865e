package main

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
)

// exitCodesHelp ends every command's help: scripts branch on these.
const exitCodesHelp = `
Exit codes:
  0  success
  1  a violation, a failed turn, or a refused operation (a session busy)
  2  usage or configuration error
  3  the turn is suspended, waiting for a decision (vigil approve, vigil deny)
  4  not found: a session, a call, a file
  130  stopped by Ctrl-C (vigil run -s ID --continue carries a stopped turn on)
`

// rootHelp ends the help of vigil itself, after the commands.
const rootHelp = `
Configuration:
  Commands that take -c use ./plugins.yaml when there is one. Elsewhere they
  use the built-in composition (an offline scripted model, the tools/fs and
  tools/calc tools, strict invariants), whose sessions are kept in
  $XDG_STATE_HOME/vigil/sessions, or ~/.local/state/vigil/sessions when
  XDG_STATE_HOME is unset. 'vigil init' writes it to a plugins.yaml to edit.

Environment:
  VIGIL_LOG       log level on stderr: trace, debug, info, warn (default),
                  error, off; --log-level overrides it
  NO_COLOR        no colour in log lines
  XDG_STATE_HOME  where sessions go without a plugins.yaml
`

// newRootCmd builds the command tree, wired to e's streams.
func newRootCmd(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:           "vigil",
		Short:         "Run, inspect and verify Vigil agents composed in plugins.yaml",
		Version:       versionString(),
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if e.logLevel != "" && hclog.LevelFromString(e.logLevel) == hclog.NoLevel {
				return fmt.Errorf("invalid argument %q for \"--log-level\" flag: want trace, debug, info, warn, error or off", e.logLevel)
			}
			return nil
		},
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetVersionTemplate("{{.Name}} {{.Version}}\n")
	// A command with subcommands (sessions) runs only to say one is
	// missing: its usage shows the subcommands' line alone.
	usage := strings.Replace(root.UsageTemplate(), "{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1)
	root.SetUsageTemplate(usage + "{{if not .HasParent}}" + rootHelp + "{{end}}" + exitCodesHelp)
	root.PersistentFlags().BoolVarP(&e.quiet, "quiet", "q", false, "show no progress on stderr (plugins starting, lease waits, the model, running tools)")
	root.PersistentFlags().StringVar(&e.logLevel, "log-level", "", "log level on stderr: trace, debug, info, warn, error, off (default VIGIL_LOG's, else warn)")
	_ = root.RegisterFlagCompletionFunc("log-level", cobra.FixedCompletions(
		[]cobra.Completion{"trace", "debug", "info", "warn", "error", "off"}, cobra.ShellCompDirectiveNoFileComp))
	root.AddCommand(
		newRunCmd(e),
		newChatCmd(e),
		newSessionsCmd(e),
		newVerifyCmd(e),
		newKeysCmd(e),
		newProveCmd(e),
		newVerifyProofCmd(e),
		newReplayCmd(e),
		newEvalCmd(e),
		newTraceCmd(e),
		newApproveCmd(e),
		newDenyCmd(e),
		newReconcileCmd(e),
		newServeCmd(e),
		newMCPCmd(e),
		newWorkerCmd(e),
		newDemoCmd(e),
		newPluginsCmd(e),
		newInitCmd(e),
		newVersionCmd(e),
	)
	return root
}

// action adapts a command's function to cobra, marking the errors it
// returns as the command's own (see exitCode).
func action(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		if err := fn(cmd, args); err != nil {
			return ranError{err}
		}
		return nil
	}
}

// configFlag adds -c/--config to cmd.
func configFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVarP(p, "config", "c", "", "the plugins.yaml to use (default ./plugins.yaml, else the built-in composition)")
	_ = cmd.MarkFlagFilename("config", "yaml", "yml")
}

// jsonFlag adds --json to cmd.
func jsonFlag(cmd *cobra.Command, p *bool, what string) {
	cmd.Flags().BoolVar(p, "json", false, "print "+what+" as JSON")
}

// exactArgs is cobra.ExactArgs with the messages of this CLI. The
// command is not named: report prefixes every message with it, once.
func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(_ *cobra.Command, args []string) error {
		if len(args) != n {
			return fmt.Errorf("takes %s, got %d argument(s)", what, len(args))
		}
		return nil
	}
}

// noArgs refuses positional arguments.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return fmt.Errorf("unexpected argument %q", args[0])
	}
	return nil
}
