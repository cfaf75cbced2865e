package main

import "context"

func cmdDemo(ctx context.Context, e *env, args []string) error { return usagef("demo: not wired yet") }
