package session

import "context"

// Tail is the end of a log: what a summary of it needs (its length, its
// last turn and the records of that turn) without the rest.
type Tail struct {
	Info Info
	// Next is the log's length: the seq the next record will have.
	Next int64
	// Records are the log's records from its last turn/start on: its
	// current or last turn (none when it has no turn).
	Records []Record
}

// Tailer is implemented by stores that read a log's tail without
// loading the whole log (store/jsonl reads its file from the end).
type Tailer interface {
	// Tail returns the tail of session id's log; an unknown id is
	// ErrNotFound.
	Tail(ctx context.Context, id string) (*Tail, error)
}

// LoadTail returns the tail of session id's log in s: through s's
// [Tailer] when it has one, else cut from the whole log.
func LoadTail(ctx context.Context, s Store, id string) (*Tail, error) {
	if t, ok := s.(Tailer); ok {
		return t.Tail(ctx, id)
	}
	log, err := s.Load(ctx, id)
	if err != nil {
		return nil, err
	}
	return TailOf(log.Info, log.Records), nil
}

// TailOf returns the tail of the log of info whose last records are
// records (the whole log, or any end of it that holds its last
// turn/start or, when it has none, at least its last record).
func TailOf(info Info, records []Record) *Tail {
	t := &Tail{Info: info}
	if n := len(records); n > 0 {
		t.Next = records[n-1].seq + 1
	}
	from := len(records)
	for i := len(records) - 1; i >= 0; i-- {
		if records[i].typ == TypeTurnStart {
			from = i
			break
		}
	}
	t.Records = records[from:]
	return t
}

// At returns the record of seq, when the tail holds it.
func (t *Tail) At(seq int64) (Record, bool) {
	if len(t.Records) == 0 {
		return Record{}, false
	}
	i := seq - t.Records[0].seq
	if i < 0 || i >= int64(len(t.Records)) {
		return Record{}, false
	}
	return t.Records[i], true
}
