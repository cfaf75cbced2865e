package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interrupts routes Ctrl-C (SIGINT) and SIGHUP. By default they cancel
// the command, as SIGTERM does; a chat takes Ctrl-C over while a turn
// runs, so that Ctrl-C cancels that turn only and the chat goes on, and
// `vigil serve` takes SIGHUP over to reload its token file.
type interrupts struct {
	mu       sync.Mutex
	handlers map[os.Signal]func()
}

// notifySignals returns a context cancelled by SIGTERM, SIGHUP and, unless
// taken over, SIGINT, with the cause NotifyContext gives ("interrupt
// signal received"), and the function that stops listening.
func notifySignals(parent context.Context) (context.Context, *interrupts, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	in := &interrupts{handlers: map[os.Signal]func(){}}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	stopped := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				if in.deliver(sig) {
					continue
				}
				cancel(signalError{sig})
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

// signalError is the cause a signal cancels the command with; Ctrl-C's
// gives the command exit 130 (128 + SIGINT), as shells and gh do.
type signalError struct{ sig os.Signal }

func (e signalError) Error() string { return e.sig.String() + " signal received" }

// interrupted reports whether err comes from Ctrl-C (SIGINT).
func interrupted(err error) bool {
	var se signalError
	return errors.As(err, &se) && se.sig == os.Interrupt
}

// takeOver makes Ctrl-C call fn instead of cancelling the command, until
// release is called. A nil receiver (a command run in process by a test)
// takes nothing over.
func (in *interrupts) takeOver(fn func()) (release func()) {
	return in.takeOverSignal(os.Interrupt, fn)
}

// takeOverSignal makes sig (SIGINT or SIGHUP) call fn instead of
// cancelling the command, until release is called.
func (in *interrupts) takeOverSignal(sig os.Signal, fn func()) (release func()) {
	if in == nil {
		return func() {}
	}
	in.mu.Lock()
	in.handlers[sig] = fn
	in.mu.Unlock()
	return func() {
		in.mu.Lock()
		delete(in.handlers, sig)
		in.mu.Unlock()
	}
}

// deliver calls the handler that took sig over, if any.
func (in *interrupts) deliver(sig os.Signal) bool {
	in.mu.Lock()
	fn := in.handlers[sig]
	in.mu.Unlock()
	if fn == nil {
		return false
	}
	fn()
	return true
}
