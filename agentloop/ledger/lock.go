package ledger

import (
	"context"
	"sync"
)

// running holds a token per key being run in this process, so that a
// second run of a key waits for the first and then finds its result.
var running = struct {
	sync.Mutex
	keys map[string]*turnstile
}{keys: map[string]*turnstile{}}

// turnstile lets one run of a key through at a time; n counts the runs
// holding or waiting for it, and the last one out drops it.
type turnstile struct {
	token chan struct{}
	n     int
}

// lock waits for key's turn, until ctx is done, and returns its release.
func lock(ctx context.Context, key string) (unlock func(), err error) {
	running.Lock()
	t := running.keys[key]
	if t == nil {
		t = &turnstile{token: make(chan struct{}, 1)}
		running.keys[key] = t
	}
	t.n++
	running.Unlock()
	leave := func() {
		running.Lock()
		if t.n--; t.n == 0 {
			delete(running.keys, key)
		}
		running.Unlock()
	}
	select {
	case t.token <- struct{}{}:
		return func() { <-t.token; leave() }, nil
	case <-ctx.Done():
		leave()
		return nil, context.Cause(ctx)
	}
}
