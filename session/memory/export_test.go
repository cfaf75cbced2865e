package memory

// Crash drops s as a dying process would (for RunQueue).
func Crash(s *Store) { s.crash() }
