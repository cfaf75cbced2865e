package session

// validator applies the structural rules of a log to records in order:
// the rules of each record alone (checked by [NewRecord]) plus the seq
// being the next index and a replace fitting the surface. Append, seeding,
// forking and loading all go through it, so every log a session holds
// obeys the same rules. Turn and step nesting are the invariants plugin's
// business, not the log's.
type validator struct {
	next int64
	fold Fold // bare: the surface only
}

// newValidator returns a validator for a log of about n records.
func newValidator(n int) validator {
	return validator{fold: Fold{bare: true, surface: make([]Record, 0, n/2+8)}}
}

// check validates r as the next record without changing anything and
// returns the surface positions of a replace for apply.
func (v *validator) check(r Record) (ps, pe int, err error) {
	if err := checkSeq(v.next, r); err != nil {
		return 0, 0, err
	}
	return v.fold.check(r)
}

func (v *validator) apply(r Record, ps, pe int) {
	v.next++
	v.fold.apply(r, ps, pe)
}

// add checks and applies r.
func (v *validator) add(r Record) error {
	ps, pe, err := v.check(r)
	if err != nil {
		return err
	}
	v.apply(r, ps, pe)
	return nil
}

// Validate checks that records form a valid log from seq 0: consecutive
// seqs and valid replaces (each record was checked on its own when it was
// made). The error names the seq.
func Validate(records []Record) error {
	v := newValidator(0)
	for _, r := range records {
		if err := v.add(r); err != nil {
			return err
		}
	}
	return nil
}
