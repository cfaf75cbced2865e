package session

import (
	"fmt"
	"sort"
)

// OneshotMessages returns the messages of a one-shot request over a log:
// the projection of each of sources (seqs of records), in the order they
// are cited (a record that projects to no message adds none), then
// instruction as a user message. Nothing else can be in a one-shot's
// request, so the log alone re-derives it ([OneshotRequest]). A source
// that is not a seq of records is an error.
func OneshotMessages(records []Record, sources []int64, instruction string) ([]Message, error) {
	msgs := make([]Message, 0, len(sources)+1)
	for _, s := range sources {
		r := recordAt(records, s)
		if r.IsZero() {
			return nil, fmt.Errorf("session: one-shot source %d is not a seq of the log", s)
		}
		if m, ok := Project(r); ok {
			msgs = append(msgs, m)
		}
	}
	return append(msgs, Message{Role: RoleUser, Content: instruction}), nil
}

// OneshotRequest returns the request that the request/oneshot record r
// of a log says was sent, re-derived from the log (records, which hold
// r's sources): its logged header, and [OneshotMessages] over its sources
// and instruction. derivable is false for a one-shot logged before
// one-shots carried their instruction (a log of an older build): the log
// does not hold its request, only its digest.
func OneshotRequest(records []Record, r Record) (h Header, msgs []Message, derivable bool, err error) {
	o, err := DecodeData[Oneshot](r)
	if err != nil {
		return Header{}, nil, false, err
	}
	if o.Instruction == "" {
		return Header{}, nil, false, nil
	}
	if o.Header != nil {
		h = normalizeHeader(*o.Header)
	}
	msgs, err = OneshotMessages(records, r.Sources(), o.Instruction)
	if err != nil {
		return Header{}, nil, false, err
	}
	return h, msgs, true, nil
}

// recordAt returns the record of seq in records (in seq order, usually
// one per index from 0), or the zero Record.
func recordAt(records []Record, seq int64) Record {
	if seq >= 0 && seq < int64(len(records)) && records[seq].Seq() == seq {
		return records[seq]
	}
	i := sort.Search(len(records), func(i int) bool { return records[i].Seq() >= seq })
	if i < len(records) && records[i].Seq() == seq {
		return records[i]
	}
	return Record{}
}
