package pgstore

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// notes coalesces the notifications of a store's asynchronous appends.
//
// A notifying transaction takes a lock of the whole database from its
// commit's start to its end (PostgreSQL keeps the notification queue in
// commit order), so notifying appends commit one at a time, whichever
// process makes them: with one record per append, that lock is what the
// workers of a busy database wait on. The appends that do not close a
// step (most of a turn's: chunks, tool calls, results) are therefore
// notified after they commit, by one goroutine that sends every session's
// latest length in one statement, at once when idle and, while a send is
// on its way, batching the appends that commit meanwhile. An append that
// closes a step notifies in its own transaction, as before: a turn's last
// append always does, so a writer that dies between an append and its
// deferred notification delays the followers only until the next
// notifying append of the session (the repair or continuation of its
// interrupted turn), never past the turn's end.
type notes struct {
	mu      sync.Mutex
	pending map[string]int64 // session → its length to tell
	kick    chan struct{}    // cap 1: pending is not empty
	gate    sync.Mutex       // held around each send (and by tests, to let notes pile up)
}

func newNotes() *notes {
	return &notes{pending: map[string]int64{}, kick: make(chan struct{}, 1)}
}

// add schedules the notification that session id now has next events.
func (n *notes) add(id string, next int64) {
	n.mu.Lock()
	if next > n.pending[id] {
		n.pending[id] = next
	}
	n.mu.Unlock()
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// take empties pending.
func (n *notes) take() map[string]int64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if len(n.pending) == 0 {
		return nil
	}
	out := n.pending
	n.pending = map[string]int64{}
	return out
}

// run sends the notes until the store closes, and then the last ones.
func (n *notes) run(s *Store) {
	for {
		select {
		case <-s.bg.Done():
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_ = n.send(ctx, s)
			cancel()
			return
		case <-n.kick:
		}
		if err := n.send(s.bg, s); err != nil && s.bg.Err() == nil {
			s.log.Warn("notifying appends failed; retrying", "error", err)
			select {
			case <-s.bg.Done():
			case <-time.After(100 * time.Millisecond):
			}
			select {
			case n.kick <- struct{}{}:
			default:
			}
		}
	}
}

// send notifies the pending notes in one transaction, committed
// asynchronously: losing a notification in a server crash loses nothing
// that a follower, which reads from its own position, needs.
func (n *notes) send(ctx context.Context, s *Store) error {
	n.gate.Lock()
	defer n.gate.Unlock()
	taken := n.take()
	if len(taken) == 0 {
		return nil
	}
	payloads := make([]string, 0, len(taken))
	for id, next := range taken {
		payloads = append(payloads, fmt.Sprintf("e %d %s", next, id))
	}
	_, err := s.exec(ctx, `SELECT set_config('synchronous_commit', 'off', true), pg_notify($1, p) FROM unnest($2::text[]) AS p`,
		s.channel, payloads)
	if err != nil {
		for id, next := range taken {
			n.add(id, next)
		}
		return err
	}
	return nil
}
