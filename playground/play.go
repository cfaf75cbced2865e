package playground

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/plugins/provider/scripted"
	"github.com/vigil-run/vigil/plugins/tools/calc"
	"github.com/vigil-run/vigil/session/live"
)

// Player states.
const (
	stateIdle    = "idle"
	statePlaying = "playing"
	statePaused  = "paused"
	stateDone    = "done"
	stateFailed  = "failed"
	// stateWaiting: the demo's turn is suspended on an approval; the
	// visitor's decision resumes it.
	stateWaiting = "waiting"
)

// Play controls, as the page sends them.
const (
	opPlay   = "play"
	opPause  = "pause"
	opStep   = "step"
	opFinish = "finish"
	opReset  = "reset"
)

// ErrUnknownOp is returned for a play control the player does not know.
var ErrUnknownOp = errors.New("playground: unknown play control")

// player runs the demo session: its turns with a scripted model, paced.
type player struct {
	mu     sync.Mutex
	id     string // the demo session, "" when none runs
	ctx    context.Context
	cancel context.CancelFunc
	pace   *pacer
	done   chan struct{}
	state  string
	// ready is signalled when every pending call of the demo's suspended
	// step is decided: the run resumes the turn.
	ready chan struct{}
	// deciding lets a decision's records past the pacer: the visitor's
	// own action shows at once, whatever the pace (and a paused pace
	// would hold the decision, and the action, until a step).
	deciding bool
}

// isDemo reports whether id is the demo session.
func (p *player) isDemo(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return id != "" && id == p.id
}

// hold returns when the page may see the demo's newest commit. It is
// called from the session/event observer, so the loop waits with it.
func (p *player) hold(id string) {
	p.mu.Lock()
	if id == "" || id != p.id || p.pace == nil || p.deciding {
		p.mu.Unlock()
		return
	}
	pace, ctx := p.pace, p.ctx
	p.mu.Unlock()
	pace.wait(ctx)
}

// stop ends the demo run, if any, and waits for its goroutine.
func (p *player) stop() {
	p.mu.Lock()
	cancel, done, pace := p.cancel, p.done, p.pace
	p.id, p.ctx, p.cancel, p.pace, p.done, p.state, p.ready = "", nil, nil, nil, nil, stateIdle, nil
	p.mu.Unlock()
	if pace != nil {
		pace.set(paceFast)
	}
	if cancel != nil {
		cancel()
	}
	if done != nil {
		<-done
	}
}

func (p *player) snapshot() (state string, pace *pacer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.state == "" {
		return stateIdle, nil
	}
	return p.state, p.pace
}

// setState records a state of the current run and announces it.
func (v *visitor) setState(state string, err error) {
	p := &v.pl
	p.mu.Lock()
	p.state = state
	ps := playState{State: state, Session: p.id}
	p.mu.Unlock()
	if err != nil {
		ps.Error = err.Error()
	}
	v.hub.setPlay(ps)
}

// control applies a play control and returns the player's state.
func (v *visitor) control(op string) (playState, error) {
	if err := v.lock(); err != nil {
		return playState{}, err
	}
	defer v.act.Unlock()
	state, pace := v.pl.snapshot()
	// The state is announced before the pacer lets the demo go on: once
	// released, the demo may reach a decision and announce "waiting",
	// which an announcement after it would overwrite.
	var err error
	switch op {
	case opPlay:
		switch state {
		case stateIdle:
			err = v.startDemo(paceAuto, statePlaying)
		case statePaused:
			v.setState(statePlaying, nil)
			pace.set(paceAuto)
		case stateWaiting:
			pace.set(paceAuto) // the pace the turn resumes at
		}
	case opPause:
		switch state {
		case statePlaying:
			v.setState(statePaused, nil)
			pace.set(paceManual)
		case stateWaiting:
			pace.set(paceManual)
		}
	case opStep:
		switch state {
		case stateIdle:
			if err = v.startDemo(paceManual, statePaused); err == nil {
				_, pace = v.pl.snapshot()
				pace.step()
			}
		case statePlaying, statePaused:
			v.setState(statePaused, nil)
			pace.step()
		case stateWaiting:
			pace.step()
		}
	case opFinish:
		switch state {
		case stateIdle:
			err = v.startDemo(paceFast, statePlaying)
		case statePlaying, statePaused:
			v.setState(statePlaying, nil)
			pace.set(paceFast)
		case stateWaiting:
			pace.set(paceFast)
		}
	case opReset:
		v.pl.stop()
		v.closeSessions()
		v.setState(stateIdle, nil)
	default:
		return v.hub.playState(), fmt.Errorf("%w %q", ErrUnknownOp, op)
	}
	return v.hub.playState(), err
}

// startDemo creates the visitor's demo session and runs its turns in the
// background, paced from mode. v.act is held.
func (v *visitor) startDemo(mode int, state string) error {
	s := v.srv
	ctx, cancel := context.WithCancel(s.base)
	sess, err := s.mgr.Create(ctx)
	if err != nil {
		cancel()
		return fmt.Errorf("playground: demo: %w", err)
	}
	model, err := scripted.New(demoScript())
	if err != nil {
		cancel()
		return fmt.Errorf("playground: demo: %w", err)
	}
	agent := agentloop.New(s.c, agentConfig, agentloop.WithProvider(model), agentloop.WithTools(calc.Tool{}), agentloop.WithName("demo"))
	done := make(chan struct{})
	p := &v.pl
	p.mu.Lock()
	p.id, p.ctx, p.cancel, p.pace, p.done, p.ready = sess.ID(), ctx, cancel, newPacer(s.opts.Delay, mode), done, make(chan struct{}, 1)
	p.mu.Unlock()
	s.track(v, sess, kindDemo, "demo", "the scripted session: a tool call that waits for your decision, then a compaction")
	v.setState(state, nil)
	go v.runDemo(ctx, sess, agent, done)
	return nil
}

// runDemo runs the demo's turns.
func (v *visitor) runDemo(ctx context.Context, sess *live.Session, agent *agentloop.Agent, done chan struct{}) {
	s := v.srv
	defer close(done)
	defer func() {
		if err := agent.Close(); err != nil {
			s.opts.Logger.Error("closing the demo agent", "error", err)
		}
	}()
	var err error
	for _, prompt := range demoPrompts {
		_, err = agent.Run(ctx, sess, prompt)
		// A suspended turn waits for the visitor's decisions, then
		// resumes here, paced as any turn (it may suspend again).
		for errors.Is(err, agentloop.ErrSuspended) {
			if !v.awaitDecision(ctx, done) {
				return
			}
			_, err = agent.Resume(ctx, sess)
		}
		if err != nil {
			break
		}
	}
	if ctx.Err() != nil {
		return // reset or closed: stop has taken over the state
	}
	v.pl.mu.Lock()
	current := v.pl.done == done
	v.pl.mu.Unlock()
	if !current {
		return
	}
	if err != nil {
		s.opts.Logger.Error("the demo failed", "error", err)
		v.setState(stateFailed, err)
		return
	}
	v.setState(stateDone, nil)
}

// awaitDecision announces that the demo run done waits for the visitor's
// decisions and returns when they are in (true), or when the run is
// stopped (false).
func (v *visitor) awaitDecision(ctx context.Context, done chan struct{}) bool {
	p := &v.pl
	p.mu.Lock()
	current, ready := p.done == done, p.ready
	p.mu.Unlock()
	if !current {
		return false
	}
	v.setState(stateWaiting, nil)
	select {
	case <-ctx.Done():
		return false
	case <-ready:
	}
	// The turn resumes at the pace the visitor chose meanwhile.
	p.mu.Lock()
	current = p.done == done
	state := statePlaying
	if p.pace != nil && p.pace.manual() {
		state = statePaused
	}
	p.mu.Unlock()
	if !current {
		return false
	}
	v.setState(state, nil)
	return true
}

// decided tells the demo run that every pending call of its suspended
// step is decided.
func (p *player) decided() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready != nil {
		select {
		case p.ready <- struct{}{}:
		default: // already told
		}
	}
}

// decide runs fn, which logs a decision in the demo session, letting its
// records past the pacer.
func (p *player) decide(fn func()) {
	p.mu.Lock()
	p.deciding = true
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.deciding = false
		p.mu.Unlock()
	}()
	fn()
}
