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
