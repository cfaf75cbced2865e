package jsonl

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"slices"

	"github.com/vigil-run/vigil/session"
)

// Delete implements [session.Deleter]: the session's jobs leave the
// queue's journal first (so no worker claims one for a log that is
// going), then its log file and its holder file go. A writer of this
// store holding the session is abandoned, what it buffered lost; a
// writer in another process holding the file's lock writes on to the
// unlinked file, unseen, until its claim, cancelled by the journal,
// ends. Anything else kept per session must go here too (sessionFiles).
func (s *Store) Delete(ctx context.Context, id string) error {
	if err := s.sessionExists(id); err != nil {
		return session.StoreError("jsonl", "delete", id, err)
	}
	if err := s.forgetJobs(id); err != nil {
		return session.StoreError("jsonl", "delete", id, err)
	}
	s.mu.Lock()
	w := s.writers[id]
	delete(s.writers, id)
	s.mu.Unlock()
	if w != nil {
		w.abandon()
	}
	var errs []error
	for _, p := range s.sessionFiles(id) {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if err := syncDir(s.dir); err != nil {
		errs = append(errs, err)
	}
	// Followers read the file again, and find it gone.
	s.note.appended(id)
	if err := errors.Join(errs...); err != nil {
		return session.StoreError("jsonl", "delete", id, err)
	}
	return nil
}

// sessionFiles are the files the store keeps for session id: its log
// first, then its holder file and its ledger of tool results.
func (s *Store) sessionFiles(id string) []string {
	return []string{s.Path(id), s.holderPath(id), s.LedgerPath(id)}
}

// forgetJobs writes a forget line for session id to the journal, when
// it has jobs of the session, finished or not.
func (s *Store) forgetJobs(id string) error {
	q, err := s.queue()
	if err != nil {
		return err
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if err := q.catchUp(); err != nil {
		return err
	}
	return q.locked(func() error {
		of := func(j *qjob) bool { return j.job.Session == id }
		if !slices.ContainsFunc(q.jobs, of) && !slices.ContainsFunc(q.done, of) {
			return nil // nothing to write: no journal made for it
		}
		return q.write(op{Op: "forget", Session: id})
	})
}

// forget drops every job of session sid, finished or not; this store's
// claims of them are cancelled, and their ends are refused (ErrJobDone).
// q.mu is held.
func (q *jqueue) forget(sid string) {
	for _, j := range q.jobs {
		if j.job.Session != sid {
			continue
		}
		if c := q.claims[j.job.ID]; c != nil && j.owner == q.owner {
			c.once.Do(func() { close(c.cancel) })
		}
	}
	of := func(j *qjob) bool { return j.job.Session == sid }
	q.jobs = slices.DeleteFunc(q.jobs, of)
	q.done = slices.DeleteFunc(q.done, of)
}

var _ session.Deleter = (*Store)(nil)
