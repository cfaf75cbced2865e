package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interrupts routes Ctrl-C (SIGINT). By default it cancels the command,
// as SIGTERM and SIGHUP do; a chat takes it over while a turn runs, so
// that Ctrl-C cancels that turn only and the chat goes on.
type interrupts struct {
	mu      sync.Mutex
	handler func()
}

// notifySignals returns a context cancelled by SIGTERM, SIGHUP and, unless
// taken over, SIGINT, with the cause NotifyContext gives ("interrupt
// signal received"), and the function that stops listening.
func notifySignals(parent context.Context) (context.Context, *interrupts, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	in := &interrupts{}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	stopped := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				if sig == os.Interrupt && in.deliver() {
					continue
				}
				cancel(errors.New(sig.String() + " signal received"))
			case <-stopped:
				return
			}
		}
	}()
	return ctx, in, func() {
		signal.Stop(ch)
		close(stopped)
		cancel(nil)
	}
}

// takeOver makes Ctrl-C call fn instead of cancelling the command, until
// release is called. A nil receiver (a command run in process by a test)
// takes nothing over.
func (in *interrupts) takeOver(fn func()) (release func()) {
	if in == nil {
		return func() {}
	}
	in.mu.Lock()
	in.handler = fn
	in.mu.Unlock()
	return func() {
		in.mu.Lock()
		in.handler = nil
		in.mu.Unlock()
	}
}

// deliver calls the handler that took Ctrl-C over, if any.
func (in *interrupts) deliver() bool {
	in.mu.Lock()
	fn := in.handler
	in.mu.Unlock()
	if fn == nil {
		return false
	}
	fn()
	return true
}
