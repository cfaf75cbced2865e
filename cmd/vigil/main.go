// Command vigil runs, inspects and verifies Vigil agents composed in
// plugins.yaml.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// Exit codes, as DESIGN's table and `vigil --help` give them.
const (
	exitOK        = 0
	exitFailed    = 1 // a violation, a failed turn, or a refused operation
	exitUsage     = 2 // usage or configuration errors
	exitSuspended = 3 // a turn suspended, waiting for a decision (approvals)
	exitNotFound  = 4 // a session, a call or a file that does not exist
	// exitInterrupted: Ctrl-C stopped the command (128 + SIGINT).
	exitInterrupted = 130
)

// usageError marks errors that exit with exitUsage.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// notFoundError marks errors that exit with exitNotFound when nothing in
// their chain says so already (session.ErrNotFound, fs.ErrNotExist).
type notFoundError struct{ err error }

func (e notFoundError) Error() string { return e.err.Error() }
func (e notFoundError) Unwrap() error { return e.err }

func notFoundf(format string, args ...any) error {
	return notFoundError{fmt.Errorf(format, args...)}
}

// silentError carries an exit code for a failure already reported.
type silentError struct{ code int }

func (s silentError) Error() string { return fmt.Sprintf("exit %d", s.code) }

// ranError marks an error a command's own code returned, as opposed to
// one cobra returned while parsing the command line (a usage error).
type ranError struct{ err error }

func (e ranError) Error() string { return e.err.Error() }
func (e ranError) Unwrap() error { return e.err }

// env is what a command may use of the process: its streams, arguments
// and environment. Tests run commands in process with their own env.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	getenv         func(string) string
	// logLevel is --log-level; empty means VIGIL_LOG's.
	logLevel string
	// logFormat is --log-format of serve and worker: "text" (or "") or "json".
	logFormat string
	// interrupts routes Ctrl-C (nil in process: it cannot be taken over).
	interrupts *interrupts
	// quiet: no progress on stderr (--quiet).
	quiet bool
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

// run runs the command line args and returns the exit code.
func run(ctx context.Context, e *env, args []string) int {
	root := newRootCmd(e)
	if len(args) == 0 {
		// No command: the help, as gh and kubectl print it.
		args = []string{"--help"}
	}
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return report(e, cmd, err)
}

// report prints err once, prefixed with the command it came from, and
// maps it to an exit code.
func report(e *env, cmd *cobra.Command, err error) int {
	if err == nil {
		return exitOK
	}
	name := "vigil"
	if cmd != nil {
		name = cmd.CommandPath()
	}
	var silent silentError
	if errors.As(err, &silent) {
		return silent.code
	}
	fmt.Fprintf(e.stderr, "%s: %s\n", name, termSafe(err.Error()))
	code := exitCode(err)
	if code == exitUsage && !errors.As(err, new(*configError)) {
		fmt.Fprintf(e.stderr, "Run '%s --help' for usage.\n", name)
	}
	return code
}

// exitCode maps an error to its exit code: an error cobra returned while
// parsing the command line is a usage error; a command's own error is
// classified by what it wraps.
func exitCode(err error) int {
	var ran ranError
	if !errors.As(err, &ran) {
		return exitUsage
	}
	var ue usageError
	var ce *configError
	var nf notFoundError
	switch {
	case errors.As(err, &ue), errors.As(err, &ce):
		return exitUsage
	case errors.As(err, &nf), errors.Is(err, session.ErrNotFound), errors.Is(err, os.ErrNotExist),
		errors.Is(err, session.ErrUnknownCall):
		return exitNotFound
	case errors.Is(err, agentloop.ErrSuspended):
		return exitSuspended
	case interrupted(err):
		return exitInterrupted
	}
	return exitFailed
}
