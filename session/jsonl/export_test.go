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

// SetTailChunk sets how much Tail reads at a time, for the test's
// duration.
func SetTailChunk(n int) (restore func()) {
	old := tailChunk
	tailChunk = n
	return func() { tailChunk = old }
}

// SetFollowChunk sets how much a follower reads at once, for the test's
// duration.
func SetFollowChunk(n int) (restore func()) {
	old := followChunk
	followChunk = n
	return func() { followChunk = old }
}
