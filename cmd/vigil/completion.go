package main

import (
	"context"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/session/live"
)

// sessionFlag adds -s/--session to cmd, completed with the store's ids.
func sessionFlag(e *env, cmd *cobra.Command, p *string, usage string) {
	cmd.Flags().StringVarP(p, "session", "s", "", usage)
	_ = cmd.RegisterFlagCompletionFunc("session", completeSessionIDs(e, false))
}

// completeSessionIDs completes session ids from the store of the
// composition the command's -c names, opened read-only as
// `sessions list` does, each with its creation time. With files, a file
// name completes too (verify and replay take a log file or an id);
// otherwise only the first argument is an id.
func completeSessionIDs(e *env, files bool) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		directive := cobra.ShellCompDirectiveNoFileComp
		if files {
			directive = cobra.ShellCompDirectiveDefault
		}
		if !files && cmd.Flags().Lookup("session") == nil && len(args) > 0 {
			return nil, directive
		}
		cfg, _ := cmd.Flags().GetString("config")
		// Logs and errors would land in the shell's completion output.
		quiet := &env{stdin: e.stdin, stdout: io.Discard, stderr: io.Discard, getenv: e.getenv, logLevel: "off"}
		h, err := openStoreHost(quiet, cfg)
		if err != nil {
			return nil, directive
		}
		defer h.close()
		mgr, err := service(h, live.Sessions)
		if err != nil {
			return nil, directive
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		infos, _ := mgr.Store().List(ctx)
		var out []cobra.Completion
		for _, info := range infos {
			if strings.HasPrefix(info.ID, toComplete) {
				out = append(out, cobra.CompletionWithDesc(info.ID, "created "+info.Created.UTC().Format("2006-01-02 15:04:05")))
			}
		}
		return out, directive
	}
}
