package agentloop_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

func echoTool(name string) funcTool {
	return funcTool{name: name, fn: func(_ context.Context, args json.RawMessage) (string, error) { return string(args), nil }}
}

func offered(req *agentloop.Request) []string {
	var names []string
	for _, ts := range req.Header.Tools {
		names = append(names, ts.Name)
	}
	return names
}

// TestRequestWaitsForAToolChangeInProgress: a request is built only once
// the tool changes announced before it are applied.
func TestRequestWaitsForAToolChangeInProgress(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec))
	done := agentloop.ToolsChanging(e.c, 0)
	ran := make(chan error, 1)
	go func() {
		_, err := a.Run(context.Background(), e.session(), "hi")
		ran <- err
	}()
	_, err := agentloop.ProvideTool(e.c, echoTool("late"))
	require.NoError(t, err)
	done()
	done() // twice is harmless
	require.NoError(t, <-ran)
	reqs := rec.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []string{"late"}, offered(reqs[0]))
}

// TestToolChangeHoldLapses: a holder that never releases delays requests
// by at most its bound.
func TestToolChangeHoldLapses(t *testing.T) {
	e := newEnv(t)
	_ = agentloop.ToolsChanging(e.c, 20*time.Millisecond)
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(&recorder{}))
	res, err := a.Run(context.Background(), e.session(), "hi")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)
}

// TestToolChangeHoldsConcernTheirBusAndServiceTools: agents on another
// bus, or with tools of their own, do not wait; a cancelled turn stops
// waiting.
func TestToolChangeHoldsConcernTheirBusAndServiceTools(t *testing.T) {
	held := newEnv(t)
	done := agentloop.ToolsChanging(held.c, 0)
	defer done()

	other := newEnv(t)
	res, err := agentloop.New(other.c, agentloop.Config{}, agentloop.WithProvider(&recorder{})).Run(context.Background(), other.session(), "hi")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)

	fixed := agentloop.New(held.c, agentloop.Config{}, agentloop.WithProvider(&recorder{}), agentloop.WithTools(echoTool("own")))
	res, err = fixed.Run(context.Background(), held.session(), "hi")
	require.NoError(t, err)
	assert.Equal(t, session.ReasonCompleted, res.Reason)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res, err = agentloop.New(held.c, agentloop.Config{}, agentloop.WithProvider(&recorder{})).Run(ctx, held.session(), "hi")
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, session.ReasonAborted, res.Reason)
}
