package main

import "context"

func cmdRun(ctx context.Context, e *env, args []string) error    { return usagef("run: not wired yet") }
func cmdChat(ctx context.Context, e *env, args []string) error   { return usagef("chat: not wired yet") }
func cmdReplay(ctx context.Context, e *env, args []string) error { return usagef("replay: not wired yet") }
func cmdDemo(ctx context.Context, e *env, args []string) error   { return usagef("demo: not wired yet") }
