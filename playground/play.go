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
func (s *Server) setState(state string, err error) {
	p := &s.pl
	p.mu.Lock()
	p.state = state
	ps := playState{State: state, Session: p.id}
	p.mu.Unlock()
	if err != nil {
		ps.Error = err.Error()
	}
	s.hub.setPlay(ps)
}

// control applies a play control and returns the player's state.
func (s *Server) control(op string) (playState, error) {
	s.act.Lock()
	defer s.act.Unlock()
	state, pace := s.pl.snapshot()
	var err error
	switch op {
	case opPlay:
		switch state {
		case stateIdle:
			err = s.startDemo(paceAuto, statePlaying)
		case statePaused:
			pace.set(paceAuto)
			s.setState(statePlaying, nil)
		}
	case opPause:
		if state == statePlaying {
			pace.set(paceManual)
			s.setState(statePaused, nil)
		}
	case opStep:
		switch state {
		case stateIdle:
			if err = s.startDemo(paceManual, statePaused); err == nil {
				_, pace = s.pl.snapshot()
				pace.step()
			}
		case statePlaying, statePaused:
			pace.step()
			s.setState(statePaused, nil)
		}
	case opFinish:
		switch state {
		case stateIdle:
			err = s.startDemo(paceFast, statePlaying)
		case statePlaying, statePaused:
			pace.set(paceFast)
			s.setState(statePlaying, nil)
		}
	case opReset:
		s.pl.stop()
		// The sessions are closed, not kept live: a long demo does not
		// accumulate every experiment's session.
		for _, id := range s.hub.reset() {
			if sess, ok := s.mgr.Get(id); ok {
				if err := sess.Close(s.base); err != nil {
					s.opts.Logger.Warn("closing a session", "session", id, "error", err)
				}
			}
		}
		s.setState(stateIdle, nil)
	default:
		return s.hub.playState(), fmt.Errorf("%w %q", ErrUnknownOp, op)
	}
	return s.hub.playState(), err
}

// startDemo creates the demo session and runs its turns in the
// background, paced from mode. s.act is held.
func (s *Server) startDemo(mode int, state string) error {
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
	p := &s.pl
	p.mu.Lock()
	p.id, p.ctx, p.cancel, p.pace, p.done = sess.ID(), ctx, cancel, newPacer(s.opts.Delay, mode), done
	p.mu.Unlock()
	s.hub.describe(sess.ID(), kindDemo, "demo", "the scripted session: a tool call, then a compaction")
	s.setState(state, nil)
	go s.runDemo(ctx, sess, agent, done)
	return nil
}

// runDemo runs the demo's turns.
func (s *Server) runDemo(ctx context.Context, sess *live.Session, agent *agentloop.Agent, done chan struct{}) {
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
	s.pl.mu.Lock()
	current := s.pl.done == done
	s.pl.mu.Unlock()
	if !current {
		return
	}
	if err != nil {
		s.opts.Logger.Error("the demo failed", "error", err)
		s.setState(stateFailed, err)
		return
	}
	s.setState(stateDone, nil)
}
