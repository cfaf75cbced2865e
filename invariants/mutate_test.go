package invariants_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/vigil-run/vigil/session"
)

// spec is an editable copy of a record.
type spec struct {
	seq int64
	ev  session.Event
}

func specsOf(records []session.Record) []spec {
	out := make([]spec, len(records))
	for i, r := range records {
		ev := session.Event{Type: r.Type(), Turn: r.Turn(), Step: r.Step(), Sources: r.Sources(), Ignorable: r.Ignorable(), Data: json.RawMessage(r.Data())}
		if sf := r.Surface(); sf.Op == session.OpReplace {
			ev.Surface = &sf
		}
		out[i] = spec{seq: r.Seq(), ev: ev}
	}
	return out
}

// renumber gives specs consecutive seqs and rewrites the seqs their
// sources, replace ranges and decisions' cites name.
func renumber(specs []spec) []spec {
	remap := map[int64]int64{}
	for i, s := range specs {
		if _, ok := remap[s.seq]; !ok {
			remap[s.seq] = int64(i)
		}
	}
	out := make([]spec, len(specs))
	for i, s := range specs {
		ev := s.ev
		ev.Sources = nil
		for _, src := range s.ev.Sources {
			if n, ok := remap[src]; ok {
				ev.Sources = append(ev.Sources, n)
			}
		}
		if sf := s.ev.Surface; sf != nil {
			c := *sf
			c.Start, c.End = remap[sf.Start], remap[sf.End]
			ev.Surface = &c
		}
		if ev.Type == session.TypeApprovalDecision {
			// A decision's cites is a seq too (0, or dropped: none).
			if d := dataOf[session.ApprovalDecision](s); d.Cites != 0 {
				d.Cites = remap[d.Cites]
				n := spec{ev: ev}
				setData(&n, d)
				ev = n.ev
			}
		}
		out[i] = spec{seq: int64(i), ev: ev}
	}
	return out
}

// jsonlOf renders specs as a stored log, each line made by the session
// package so only the edit itself is wrong.
func jsonlOf(id string, specs []spec) ([]byte, error) {
	t := time.Date(2026, 11, 29, 20, 0, 0, 0, time.UTC)
	out := session.AppendHeaderLine(nil, session.Info{ID: id, Created: t})
	for _, s := range specs {
		r, err := session.NewRecord(s.seq, t, s.ev)
		if err != nil {
			return nil, fmt.Errorf("seq %d %s: %w", s.seq, s.ev.Type, err)
		}
		out = r.AppendLine(out)
	}
	return out, nil
}

func setData(s *spec, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	s.ev.Data = json.RawMessage(b)
}

func dataOf[T any](s spec) T {
	var v T
	if err := json.Unmarshal(s.ev.Data.(json.RawMessage), &v); err != nil {
		panic(err)
	}
	return v
}

// find returns the index of the n-th (0-based) spec of type typ.
func find(specs []spec, typ string, n int) int {
	for i, s := range specs {
		if s.ev.Type == typ {
			if n == 0 {
				return i
			}
			n--
		}
	}
	panic("no " + typ)
}
