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
	if id == "" || id != p.id || p.pace == nil {
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
	p.id, p.ctx, p.cancel, p.pace, p.done, p.state = "", nil, nil, nil, nil, stateIdle
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
	var err error
	switch op {
	case opPlay:
		switch state {
		case stateIdle:
			err = v.startDemo(paceAuto, statePlaying)
		case statePaused:
			pace.set(paceAuto)
			v.setState(statePlaying, nil)
		}
	case opPause:
		if state == statePlaying {
			pace.set(paceManual)
			v.setState(statePaused, nil)
		}
	case opStep:
		switch state {
		case stateIdle:
			if err = v.startDemo(paceManual, statePaused); err == nil {
				_, pace = v.pl.snapshot()
				pace.step()
			}
		case statePlaying, statePaused:
			pace.step()
			v.setState(statePaused, nil)
		}
	case opFinish:
		switch state {
		case stateIdle:
			err = v.startDemo(paceFast, statePlaying)
		case statePlaying, statePaused:
			pace.set(paceFast)
			v.setState(statePlaying, nil)
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
	p.id, p.ctx, p.cancel, p.pace, p.done = sess.ID(), ctx, cancel, newPacer(s.opts.Delay, mode), done
	p.mu.Unlock()
	s.track(v, sess, kindDemo, "demo", "the scripted session: a tool call, then a compaction")
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
		if _, err = agent.Run(ctx, sess, prompt); err != nil {
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
