package jsonl

// Crash closes s as a dying process would (for RunQueue): its file locks
// go, nothing it buffered is written, and its claims are not ended.
func Crash(s *Store) { _ = s.shut(true) }

// SetCompactLines sets the journal length from which the queue compacts
// it, for the test's duration.
func SetCompactLines(n int) (restore func()) {
	old := compactLines
	compactLines = n
	return func() { compactLines = old }
}

// SetFinishedLimit sets how many finished jobs the queue keeps, for the
// test's duration.
func SetFinishedLimit(n int) (restore func()) {
	old := finishedLimit
	finishedLimit = n
	return func() { finishedLimit = old }
}

// Pollers reports how many pollers of s's directory were started in this
// process so far, and whether one runs now.
func Pollers(s *Store) (started int, running bool) {
	s.note.mu.Lock()
	defer s.note.mu.Unlock()
	return s.note.polls, s.note.stop != nil
}
