package playground

import (
	"context"
	"sync"
	"time"
)

// Pacing modes.
const (
	paceManual = iota // an event passes per step
	paceAuto          // an event passes per delay
	paceFast          // every event passes at once
)

// pacer holds the demo's commits until they may be shown: it is what makes
// play and step drive the real loop one event at a time.
type pacer struct {
	delay time.Duration

	mu      sync.Mutex
	mode    int
	permits int
	wake    chan struct{} // closed and replaced when mode or permits change
}

func newPacer(delay time.Duration, mode int) *pacer {
	return &pacer{delay: delay, mode: mode, wake: make(chan struct{})}
}

func (p *pacer) signalLocked() {
	close(p.wake)
	p.wake = make(chan struct{})
}

// set changes the mode and forgets steps not taken yet.
func (p *pacer) set(mode int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = mode
	p.permits = 0
	p.signalLocked()
}

// step switches to manual mode and lets one more event through.
func (p *pacer) step() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mode = paceManual
	p.permits++
	p.signalLocked()
}

// manual reports whether events pass one step at a time.
func (p *pacer) manual() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mode == paceManual
}

// wait returns when the next event may pass, or when ctx is done.
func (p *pacer) wait(ctx context.Context) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		p.mu.Lock()
		mode, wake := p.mode, p.wake
		switch {
		case mode == paceFast:
			p.mu.Unlock()
			return
		case mode == paceManual && p.permits > 0:
			p.permits--
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		var tick <-chan time.Time
		if mode == paceAuto {
			if timer == nil {
				timer = time.NewTimer(p.delay)
			}
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			return
		case <-tick:
			return
		case <-wake:
		}
	}
}
