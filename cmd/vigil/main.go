// Command vigil runs, inspects and verifies Vigil agents composed in
// plugins.yaml.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
)

// Exit codes.
const (
	exitOK     = 0
	exitFailed = 1 // a violation or a failed turn
	exitUsage  = 2 // usage or configuration errors
)

// usageError marks errors that exit with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// env is what a command may use of the process: its streams, arguments
// and environment. Tests run commands in process with their own env.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// interrupts routes Ctrl-C (nil in process: it cannot be taken over).
	interrupts *interrupts
	// quiet: no progress on stderr (--quiet).
	quiet bool
}

type command struct {
	name    string
	summary string
	run     func(ctx context.Context, e *env, args []string) error
}

func commands() []command {
	return []command{
		{"run", "run one turn: vigil run [-c FILE] [-s SESSION] [--json] [PROMPT]", cmdRun},
		{"chat", "interactive session: vigil chat [-c FILE] [-s SESSION]", cmdChat},
		{"sessions", "inspect sessions: vigil sessions list|show|fork|export", cmdSessions},
		{"verify", "verify stored logs offline: vigil verify FILE|ID...", cmdVerify},
		{"replay", "re-derive every request of a session: vigil replay [-c FILE] ID", cmdReplay},
		{"demo", "the playground: vigil demo [--addr 127.0.0.1:8080]", cmdDemo},
		{"plugins", "list registered plugins: vigil plugins [--schema] [--json]", cmdPlugins},
	}
}

func main() {
	// A closed terminal or a dropped ssh session (SIGHUP) stops a turn the
	// way Ctrl-C and SIGTERM do: the turn ends aborted and the log is
	// flushed, instead of the process dying with the turn open.
	ctx, intr, stop := notifySignals(context.Background())
	code := run(ctx, &env{stdin: os.Stdin, stdout: os.Stdout, stderr: os.Stderr, getenv: os.Getenv, interrupts: intr}, os.Args[1:])
	stop()
	os.Exit(code)
}

func run(ctx context.Context, e *env, args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		printUsage(e.stderr)
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	for _, c := range commands() {
		if c.name != args[0] {
			continue
		}
		err := c.run(ctx, e, args[1:])
		return report(e, c.name, err)
	}
	fmt.Fprintf(e.stderr, "vigil: unknown command %q\n\n", args[0])
	printUsage(e.stderr)
	return exitUsage
}

// report prints err and maps it to an exit code.
func report(e *env, name string, err error) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	var ce *configError
	var silent silentError
	switch {
	case errors.As(err, &silent):
		return silent.code
	case errors.As(err, &ue), errors.As(err, &ce):
		fmt.Fprintf(e.stderr, "vigil %s: %v\n", name, err)
		return exitUsage
	default:
		fmt.Fprintf(e.stderr, "vigil %s: %v\n", name, err)
		return exitFailed
	}
}

// silentError carries an exit code for a failure already reported.
type silentError struct{ code int }

func (s silentError) Error() string { return fmt.Sprintf("exit %d", s.code) }

func printUsage(w io.Writer) {
	fmt.Fprintln(w, "Usage: vigil COMMAND [ARGS]")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-9s %s\n", c.name, c.summary)
	}
}
