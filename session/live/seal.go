package live

import (
	"context"
	"fmt"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/vigil-run/vigil/session"
)

// checkpointEvery is how many records a long turn may hold past its
// last checkpoint before the next step/end writes one.
const checkpointEvery = 32

// WithSigner makes the manager's sessions sign checkpoints with signer
// (see [Session.Checkpoint]): at every turn/end and approval/decision, at a step/end once
// checkpointEvery records are uncovered, and when a session closes. A
// nil signer signs nothing.
func WithSigner(signer note.Signer) ManagerOption {
	return func(m *Manager) { m.signer = signer }
}

// seal is a session's signing state: the tree of its log so far and
// where its last checkpoint stands. Guarded by the session's appendMu.
type seal struct {
	tree    session.MerkleTree
	known   bool  // covered and last are read from the log
	covered int64 // the size of the last checkpoint's tree, -1 for none
	last    []byte
	header  tlog.Hash // the header line's hash, read with covered
	// appended: this process appended records the last checkpoint does
	// not cover. Close signs only then: a reader that opens and closes a
	// session writes nothing to it.
	appended bool
}

// Checkpoint appends a signed checkpoint of the log as it stands, unless
// no signer is configured or the last record is a checkpoint already,
// and returns the note of the log's last checkpoint (nil when none).
func (s *Session) Checkpoint(ctx context.Context) ([]byte, error) {
	if ctx.Value(dispatchKey{s}) != nil {
		return nil, fmt.Errorf("session %s: checkpoint: %w", s.info.ID, session.ErrReentrantAppend)
	}
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.closed {
		return nil, fmt.Errorf("session %s: checkpoint: %w", s.info.ID, session.ErrClosed)
	}
	if err := s.checkpointLocked(ctx); err != nil {
		return nil, err
	}
	return s.seal.last, nil
}

// LastCheckpoint returns the note of the last checkpoint this process
// signed or read in the log, nil when there is none (or no signer).
func (s *Session) LastCheckpoint() []byte {
	s.appendMu.Lock()
	defer s.appendMu.Unlock()
	if s.m.signer == nil {
		return nil
	}
	s.learnSeal()
	return s.seal.last
}

// autoCheckpoint signs after rec when rec ends a turn or decides an
// approval, or ends a step
// of a turn long enough since the last checkpoint. A failure is logged:
// rec is committed, and the next checkpoint covers what this one missed.
func (s *Session) autoCheckpoint(ctx context.Context, rec session.Record) {
	if s.m.signer == nil {
		return
	}
	switch rec.Type() {
	case session.TypeTurnEnd, session.TypeApprovalDecision:
		// A decision is signed at once: who allowed what is then under a
		// signed root before the call it allows runs.
	case session.TypeStepEnd:
		s.learnSeal()
		if int64(s.log.Len())-s.seal.covered < checkpointEvery {
			return
		}
	default:
		return
	}
	if err := s.checkpointLocked(ctx); err != nil {
		s.m.log.Error("signing a checkpoint", "session", s.info.ID, "error", err)
	}
}

// learnSeal reads the last checkpoint from the log, once.
func (s *Session) learnSeal() {
	if s.seal.known {
		return
	}
	s.seal.known, s.seal.covered = true, -1
	s.seal.header = session.HeaderHashOf(s.info)
	recs := s.log.Records()
	for i := len(recs) - 1; i >= 0; i-- {
		if msg, ok := session.CheckpointNote(recs[i]); ok {
			s.seal.covered, s.seal.last = recs[i].Seq(), msg
			return
		}
	}
}

// checkpointLocked appends the checkpoint; appendMu is held.
func (s *Session) checkpointLocked(ctx context.Context) error {
	if s.m.signer == nil {
		return nil
	}
	s.learnSeal()
	recs := s.log.Records()
	n := int64(len(recs))
	if n == 0 || n-1 == s.seal.covered {
		return nil // nothing since the last checkpoint, itself the last record
	}
	for _, r := range recs[s.seal.tree.Size():] {
		s.seal.tree.AddRecord(r)
	}
	c := session.Checkpoint{Origin: session.CheckpointOrigin(s.info.ID), Size: n, Root: s.seal.tree.Root(), Header: s.seal.header}
	msg, err := session.SignCheckpoint(c, s.m.signer)
	if err != nil {
		return fmt.Errorf("session %s: sign checkpoint: %w", s.info.ID, err)
	}
	if _, err := s.appendLocked(ctx, session.CheckpointEvent(msg)); err != nil {
		return err
	}
	s.seal.covered, s.seal.last, s.seal.appended = n, msg, false
	return nil
}

// closeCheckpoint signs, as the session closes, what this process
// appended since the last checkpoint.
func (s *Session) closeCheckpoint(ctx context.Context) error {
	if !s.seal.appended {
		return nil
	}
	return s.checkpointLocked(ctx)
}
