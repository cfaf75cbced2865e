package session

import "fmt"

// The rules every [Store] applies the same way, kept here so that they are
// stated once.

// CheckSeqs checks that records continue a log of next records: their
// seqs are next, next+1, … (else ErrSeqGap or ErrDuplicateSeq naming the
// first seq out of place). Every store's Append checks it.
func CheckSeqs(next int64, records []Record) error {
	for i, r := range records {
		if err := checkSeq(next+int64(i), r); err != nil {
			return err
		}
	}
	return nil
}

func checkSeq(want int64, r Record) error {
	switch {
	case r.seq > want:
		return fmt.Errorf("%w: seq %d, want %d", ErrSeqGap, r.seq, want)
	case r.seq < want:
		return fmt.Errorf("%w: seq %d, want %d", ErrDuplicateSeq, r.seq, want)
	}
	return nil
}

// ClosesStep reports whether records hold an event that ends a step or a
// turn (step/end, turn/end, session/end-seed). That is the durability
// contract of a store that buffers (a [Flusher]): an append holding such
// an event is durable when it returns, so an event is durable once the
// step or turn it belongs to has ended.
func ClosesStep(records []Record) bool {
	for _, r := range records {
		switch r.typ {
		case TypeStepEnd, TypeTurnEnd, TypeEndSeed:
			return true
		}
	}
	return false
}
