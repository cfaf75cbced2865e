package ledger

// SetAfterRecord sets the hook Do calls once a result is recorded, and
// returns a func that restores it.
func SetAfterRecord(f func()) (restore func()) {
	old := afterRecord
	afterRecord = f
	return func() { afterRecord = old }
}
