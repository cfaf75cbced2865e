package agentloop

import (
	"context"
	"sync"
	"time"

	"github.com/vigil-run/vigil/bus"
)

// toolsBarrier counts the holds of tool list changes in progress on one
// bus.
type toolsBarrier struct {
	holds int
	free  chan struct{} // closed when the last hold is released
}

var (
	barriersMu sync.Mutex
	barriers   = map[*bus.Root]*toolsBarrier{}
)

// ToolsChanging tells the agents on c's bus that its tool services are
// about to change: a tool provider learned that its tools changed (an MCP
// server announced notifications/tools/list_changed) and is applying the
// new set. Until done is called, an agent about to build a request waits
// before it reads the tools, so a change announced before a tool result
// is in force for the next request.
//
// The hold lapses by itself after within (when positive), so a provider
// that hangs delays requests by at most that much; pass the bound of the
// work being done (the provider's request timeout). done may be called
// more than once, and from any goroutine.
func ToolsChanging(c *bus.Context, within time.Duration) (done func()) {
	root := c.Root()
	barriersMu.Lock()
	b := barriers[root]
	if b == nil {
		b = &toolsBarrier{free: make(chan struct{})}
		barriers[root] = b
	}
	b.holds++
	barriersMu.Unlock()

	var once sync.Once
	release := func() {
		once.Do(func() {
			barriersMu.Lock()
			defer barriersMu.Unlock()
			if b.holds--; b.holds == 0 {
				close(b.free)
				delete(barriers, root)
			}
		})
	}
	if within <= 0 {
		return release
	}
	timer := time.AfterFunc(within, release)
	return func() {
		timer.Stop()
		release()
	}
}

// awaitTools waits until no tool list change is held on the agent's bus,
// or ctx is done. An agent with a fixed tool set does not wait.
func (a *Agent) awaitTools(ctx context.Context) {
	if a.fixedTools {
		return
	}
	barriersMu.Lock()
	b := barriers[a.c.Root()]
	barriersMu.Unlock()
	if b == nil {
		return
	}
	select {
	case <-b.free:
	case <-ctx.Done():
	}
}
