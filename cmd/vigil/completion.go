package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"
)

// sessionFlag adds -s/--session to cmd, completed with the store's ids.
func sessionFlag(e *env, cmd *cobra.Command, p *string, usage string) {
	cmd.Flags().StringVarP(p, "session", "s", "", usage)
	_ = cmd.RegisterFlagCompletionFunc("session", func(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return sessionIDs(e, cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
	})
}

// completeSessionIDs completes a command's session id argument: only the
// first one, or, with files, every argument and file names too (verify
// and replay take log files or ids).
func completeSessionIDs(e *env, files bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if files {
			return sessionIDs(e, cmd, toComplete), cobra.ShellCompDirectiveDefault
		}
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return sessionIDs(e, cmd, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// sessionIDs lists the ids starting with prefix, each with its creation
// time, from the store of the composition cmd's -c names, opened as
// `sessions list` opens it: only the store, which is only read. Failures
// complete nothing.
func sessionIDs(e *env, cmd *cobra.Command, prefix string) []cobra.Completion {
	cfg, _ := cmd.Flags().GetString("config")
	// Logs and errors would land in the shell's completion output.
	quiet := &env{stdin: e.stdin, stdout: io.Discard, stderr: io.Discard, getenv: e.getenv, logLevel: "off"}
	mgr, done, err := sessionsManager(quiet, cfg, true)
	if err != nil {
		return nil
	}
	defer done()
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	infos, _ := mgr.Store().List(ctx)
	var out []cobra.Completion
	for _, info := range infos {
		if strings.HasPrefix(info.ID, prefix) {
			out = append(out, cobra.CompletionWithDesc(info.ID, "created "+info.Created.UTC().Format("2006-01-02 15:04:05")))
		}
	}
	return out
}
