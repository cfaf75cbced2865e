package main

import (
	"fmt"

	"github.com/hashicorp/go-hclog"
	"github.com/spf13/cobra"
)

// The values of --log-format.
const (
	logFormatText = "text"
	logFormatJSON = "json"
)

// logFormatFlag adds --log-format to a long-running command (serve,
// worker), whose log lines a collector may read: text for people, json
// (one object a line, hclog's) for machines.
func logFormatFlag(cmd *cobra.Command, e *env) {
	cmd.Flags().StringVar(&e.logFormat, "log-format", logFormatText, "log lines on stderr: text, or json (one JSON object a line)")
	_ = cmd.RegisterFlagCompletionFunc("log-format", cobra.FixedCompletions(
		[]cobra.Completion{logFormatText, logFormatJSON}, cobra.ShellCompDirectiveNoFileComp))
}

// checkLogFormat refuses a --log-format that is neither text nor json.
func checkLogFormat(e *env) error {
	switch e.logFormat {
	case "", logFormatText, logFormatJSON:
		return nil
	}
	return usagef("--log-format %q: want text or json", e.logFormat)
}

// notef writes a notice of a long-running command (where it listens,
// that it stops) on stderr: a plain line, or with --log-format json an
// info line in the log's format, whatever the log level, so that a log
// collector reads every line of stderr as JSON.
func (e *env) notef(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if e.logFormat != logFormatJSON {
		fmt.Fprintln(e.stderr, msg)
		return
	}
	hclog.New(&hclog.LoggerOptions{Name: "vigil", Level: hclog.Info, Output: e.stderr, JSONFormat: true}).Info(msg)
}
