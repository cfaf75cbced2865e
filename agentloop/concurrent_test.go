package agentloop_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
	"github.com/vigil-run/vigil/session/memory"
)

// One agent runs turns of many sessions at once (a server's workers do):
// each session's turn is its own, whatever the others do, and the
// agent's per-session caches (the request digests, evicted past a bound)
// are safe under -race.
func TestOneAgentRunsTurnsOfManySessionsAtOnce(t *testing.T) {
	root := bus.New()
	defer root.Dispose()
	c := root.Context()
	mgr := live.NewManager(c, memory.New())
	// One reply for every request: the script's place is shared by all
	// sessions.
	prov, err := scripted.New(scripted.Config{Repeat: true, Script: []scripted.Reply{{Text: "42"}}})
	require.NoError(t, err)
	a := agentloop.New(c, agentloop.Config{Model: "scripted", MaxSteps: 4}, agentloop.WithProvider(prov), agentloop.WithTools(calc.Tool{}))
	ctx := context.Background()
	const sessions, turns = 40, 3 // more sessions than the agent keeps caches for
	var wg sync.WaitGroup
	for i := range sessions {
		wg.Go(func() {
			sess, err := mgr.Create(ctx)
			if !assert.NoError(t, err) {
				return
			}
			for n := range turns {
				res, err := a.Run(ctx, sess, fmt.Sprintf("session %d turn %d", i, n))
				if assert.NoError(t, err) {
					assert.Equal(t, session.ReasonCompleted, res.Reason)
				}
			}
		})
	}
	wg.Wait()
}
