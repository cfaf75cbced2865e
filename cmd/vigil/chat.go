package main

import (
	"context"
	"flag"
)

// cmdChat is an interactive session: each line is a turn (see chat).
func cmdChat(ctx context.Context, e *env, args []string) error {
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	cfg := fs.String("c", "plugins.yaml", "plugins.yaml")
	sid := fs.String("s", "", "resume this session")
	noWatch := fs.Bool("no-watch", false, "do not reload plugins.yaml when it changes")
	fs.BoolVar(&e.quiet, "quiet", false, "show no progress on stderr")
	if err := fs.Parse(args); err != nil {
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usagef("chat takes no arguments; type prompts on stdin")
	}
	return chat(ctx, e, chatOptions{config: *cfg, session: *sid, noWatch: *noWatch})
}
