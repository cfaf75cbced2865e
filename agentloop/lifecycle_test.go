package agentloop_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

func headers(t *testing.T, sess *live.Session) []string {
	var out []string
	for _, r := range ofType(sess.Records(), session.TypeRequestHeader) {
		out = append(out, decode[session.RequestHeader](t, r).Reason)
	}
	return out
}

func TestResumedSessionLogsResumeAndSendsFullHistory(t *testing.T) {
	e := newEnv(t)
	_, tools := workspace(t)
	prov := script(t)
	first := agentloop.New(e.c, agentloop.Config{System: "s"}, agentloop.WithProvider(prov), agentloop.WithTools(tools...))
	sess := e.session()
	for _, p := range []string{"one", "two"} {
		_, err := first.Run(context.Background(), sess, p)
		require.NoError(t, err)
	}
	assert.Equal(t, []string{session.HeaderInitial}, headers(t, sess))
	before := sess.Messages()
	require.Len(t, before, 8)

	// A new loop instance continues the log.
	rec := &recorder{}
	second := agentloop.New(e.c, agentloop.Config{System: "s"}, agentloop.WithProvider(rec), agentloop.WithTools(tools...))
	res, err := second.Run(context.Background(), sess, "three")
	require.NoError(t, err)
	assert.Equal(t, 3, res.Turn)
	assert.Equal(t, []string{session.HeaderInitial, session.HeaderResume}, headers(t, sess))
	reqs := rec.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, append(append([]session.Message(nil), before...), session.Message{Role: session.RoleUser, Content: "three"}), reqs[0].Messages.Clone())

	// The same instance does not log it again.
	_, err = second.Run(context.Background(), sess, "four")
	require.NoError(t, err)
	assert.Equal(t, []string{session.HeaderInitial, session.HeaderResume}, headers(t, sess))
}

func TestResumeAfterReopenFromTheStore(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec), agentloop.WithTools())
	sess := e.session()
	_, err := a.Run(context.Background(), sess, "one")
	require.NoError(t, err)
	require.NoError(t, sess.Close(context.Background()))

	reopened, err := e.mgr.Open(context.Background(), sess.ID())
	require.NoError(t, err)
	b := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec), agentloop.WithTools())
	_, err = b.Run(context.Background(), reopened, "two")
	require.NoError(t, err)
	assert.Equal(t, []string{session.HeaderInitial, session.HeaderResume}, headers(t, reopened))
	reqs := rec.requests()
	assert.Equal(t, 3, reqs[1].Messages.Len())
}

func TestToolServiceChangeLogsHeaderChange(t *testing.T) {
	e := newEnv(t)
	rec := &recorder{}
	// No WithTools: the agent reads the tool services at each step.
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec))
	sess := e.session()
	run := func() {
		t.Helper()
		_, err := a.Run(context.Background(), sess, "hi")
		require.NoError(t, err)
	}
	run()
	run()
	assert.Equal(t, []string{session.HeaderInitial}, headers(t, sess))

	f, err := e.c.Plugin(calc.Plugin, nil)
	require.NoError(t, err)
	run()
	assert.Equal(t, []string{session.HeaderInitial, session.HeaderChange}, headers(t, sess))
	hdr := decode[session.RequestHeader](t, ofType(sess.Records(), session.TypeRequestHeader)[1])
	require.Len(t, hdr.Header.Tools, 1)
	assert.Equal(t, "calc", hdr.Header.Tools[0].Name)
	reqs := rec.requests()
	require.Len(t, reqs[2].Header.Tools, 1)

	run()
	assert.Len(t, headers(t, sess), 2, "no change, no header")

	require.NoError(t, f.Dispose())
	run()
	assert.Equal(t, []string{session.HeaderInitial, session.HeaderChange, session.HeaderChange}, headers(t, sess))
	reqs = rec.requests()
	assert.Empty(t, reqs[len(reqs)-1].Header.Tools)
}

func TestAgentStatusSequence(t *testing.T) {
	e := newEnv(t)
	var (
		mu  sync.Mutex
		got []string
	)
	agentloop.StatusEvent.On(e.c, func(_ context.Context, ch agentloop.StatusChange) error {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(ch.From)+"→"+string(ch.To))
		return nil
	})
	rec := &recorder{}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec), agentloop.WithTools())
	assert.Equal(t, agentloop.StatusIdle, a.Status())
	for range 2 {
		_, err := a.Run(context.Background(), e.session(), "hi")
		require.NoError(t, err)
	}
	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
	assert.Equal(t, agentloop.StatusDisposed, a.Status())
	_, err := a.Run(context.Background(), e.session(), "hi")
	assert.ErrorIs(t, err, agentloop.ErrClosed)
	assert.Equal(t, []string{"idle→running", "running→idle", "idle→running", "running→idle", "idle→disposed"}, got)
}

func TestConcurrentTurnsShareOneRunningStatus(t *testing.T) {
	e := newEnv(t)
	var got []string
	agentloop.StatusEvent.On(e.c, func(_ context.Context, ch agentloop.StatusChange) error {
		got = append(got, string(ch.To))
		return nil
	})
	release := make(chan struct{})
	started := make(chan struct{}, 2)
	blocking := func(ctx context.Context) (agentloop.Stream, error) {
		started <- struct{}{}
		<-release
		return textStream("x"), nil
	}
	rec := &recorder{replies: []func(context.Context) (agentloop.Stream, error){blocking, blocking}}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec), agentloop.WithTools())
	var wg sync.WaitGroup
	for range 2 {
		s := e.session()
		wg.Go(func() {
			_, err := a.Run(context.Background(), s, "hi")
			assert.NoError(t, err)
		})
	}
	<-started
	<-started
	close(release)
	wg.Wait()
	assert.Equal(t, []string{"running", "idle"}, got)
}

func TestCloseAbortsRunningTurnsThenDisposes(t *testing.T) {
	e := newEnv(t)
	var got []string
	agentloop.StatusEvent.On(e.c, func(_ context.Context, ch agentloop.StatusChange) error {
		got = append(got, string(ch.From)+"→"+string(ch.To))
		return nil
	})
	started := make(chan struct{})
	rec := &recorder{replies: []func(context.Context) (agentloop.Stream, error){
		func(ctx context.Context) (agentloop.Stream, error) {
			close(started)
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}}
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(rec), agentloop.WithTools())
	sess := e.session()
	done := make(chan *agentloop.TurnResult)
	go func() {
		res, _ := a.Run(context.Background(), sess, "hi")
		done <- res
	}()
	<-started
	require.NoError(t, a.Close())
	res := <-done
	assert.Equal(t, session.ReasonAborted, res.Reason)
	assert.Equal(t, []string{"idle→running", "running→disposed"}, got)
}

func TestRefusedStatusChangeFailsTheRun(t *testing.T) {
	e := newEnv(t)
	agentloop.StatusEvent.On(e.c, func(_ context.Context, ch agentloop.StatusChange) error {
		if ch.To == agentloop.StatusRunning {
			return errBoom
		}
		return nil
	})
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(&recorder{}), agentloop.WithTools())
	sess := e.session()
	_, err := a.Run(context.Background(), sess, "hi")
	require.ErrorIs(t, err, errBoom)
	assert.Zero(t, sess.Len())
	assert.Equal(t, agentloop.StatusIdle, a.Status())
}

func TestAgentPluginWiresProviderToolsAndSessions(t *testing.T) {
	e := newEnv(t)
	c := e.c
	_, err := live.Sessions.Provide(c, e.mgr)
	require.NoError(t, err)
	m, ok := bus.LookupModule(agentloop.PluginName)
	require.True(t, ok)
	cfg := m.Config().(*agentloop.Config)
	cfg.System = "plugin"
	f, err := c.Plugin(m.New(), cfg)
	require.NoError(t, err)
	assert.Equal(t, bus.StatePending, f.State(), "waits for a provider")

	rec := &recorder{}
	_, err = agentloop.ProviderService.Provide(c, rec)
	require.NoError(t, err)
	assert.Equal(t, bus.StateActive, f.State())
	_, err = c.Plugin(calc.Plugin, nil)
	require.NoError(t, err)

	a, err := agentloop.AgentService.Get(c)
	require.NoError(t, err)
	sess := e.session()
	_, err = a.Run(context.Background(), sess, "hi")
	require.NoError(t, err)
	reqs := rec.requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, "plugin", reqs[0].Header.System)
	require.Len(t, reqs[0].Header.Tools, 1)

	require.NoError(t, f.Dispose())
	assert.Equal(t, agentloop.StatusDisposed, a.Status())
	_, err = agentloop.AgentService.Get(c)
	assert.ErrorIs(t, err, bus.ErrServiceMissing)
}

func TestConfigValidate(t *testing.T) {
	bad := -0.5
	cases := []struct {
		cfg agentloop.Config
		ok  bool
	}{
		{agentloop.Config{}, true},
		{agentloop.Config{MaxSteps: -1}, false},
		{agentloop.Config{MaxTokens: -1}, false},
		{agentloop.Config{MaxAttempts: -1}, false},
		{agentloop.Config{Temperature: &bad}, false},
	}
	for _, tc := range cases {
		err := tc.cfg.Validate()
		assert.Equal(t, tc.ok, err == nil, "%+v: %v", tc.cfg, err)
	}
}

func TestOpenTurnIsRefusedBeforePrepare(t *testing.T) {
	e := newEnv(t)
	sess := e.session()
	_, err := sess.Append(context.Background(), session.Event{Type: session.TypeTurnStart, Turn: 1})
	require.NoError(t, err)
	prepared := false
	agentloop.TurnPrepare.On(e.c, func(context.Context, *agentloop.Prepare) error { prepared = true; return nil })
	a := agentloop.New(e.c, agentloop.Config{}, agentloop.WithProvider(&recorder{}), agentloop.WithTools())
	res, err := a.Run(context.Background(), sess, "hi")
	assert.Nil(t, res)
	require.ErrorIs(t, err, session.ErrOpenTurn)
	assert.False(t, prepared)
	assert.Equal(t, 1, sess.Len())
}
