package jsonl

// Forget implements [session.Forgetter]: it drops the writer of id (what
// the store knows of the file between holds) once the session is closed
// in this process, so that a process that serves many sessions keeps
// nothing of those it closed. A writer still in use (holding the file,
// leased, with records not yet durable) is kept.
func (s *Store) Forget(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.writers[id]
	if w == nil || !w.idle() {
		return
	}
	delete(s.writers, id)
}

// idle reports whether the writer holds nothing: no file, no lease, no
// buffered or unsynced records, no sync timer running.
func (w *writer) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f == nil && !w.pinned && len(w.buf) == 0 && !w.unsynced && !w.armed
}
