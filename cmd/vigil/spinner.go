package main

import (
	"fmt"
	"sync"
	"time"
)

// spinner shows that a command is waiting, on stderr, only when stderr is
// a terminal. It stops for good at the first output of the turn.
type spinner struct {
	once sync.Once
	done chan struct{}
	wg   sync.WaitGroup
}

func newSpinner(e *env) *spinner {
	s := &spinner{done: make(chan struct{})}
	if !isTerminal(e.stderr) {
		close(s.done)
		return s
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		frames := `|/-\`
		t := time.NewTicker(120 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-s.done:
				fmt.Fprint(e.stderr, "\r \r")
				return
			case <-t.C:
				fmt.Fprintf(e.stderr, "\r%c", frames[i%len(frames)])
			}
		}
	}()
	return s
}

// pause stops the spinner before output is written.
func (s *spinner) pause() { s.stop() }

func (s *spinner) stop() {
	s.once.Do(func() {
		select {
		case <-s.done:
		default:
			close(s.done)
		}
	})
	s.wg.Wait()
}
