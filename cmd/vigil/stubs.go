package main

import "context"

func cmdReplay(ctx context.Context, e *env, args []string) error {
	return usagef("replay: not wired yet")
}
func cmdDemo(ctx context.Context, e *env, args []string) error { return usagef("demo: not wired yet") }
