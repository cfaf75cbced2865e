package playground

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/vigil-run/vigil/session"
)

// without returns the log records minus the event at seq d, renumbered
// from 0: later seqs move down by one, sources citing d drop it, and a
// replace whose range starts or ends at d starts or ends at its next or
// previous cited event instead. Records keep their times. The result is
// not checked: seeding it is what checks it.
func without(records []session.Record, d int64) ([]session.Record, error) {
	if d < 0 || d >= int64(len(records)) {
		return nil, fmt.Errorf("%w: seq %d: the log has seqs 0..%d", session.ErrNotFound, d, len(records)-1)
	}
	remap := func(s int64) int64 {
		if s > d {
			return s - 1
		}
		return s
	}
	out := make([]session.Record, 0, len(records)-1)
	for _, r := range records {
		if r.Seq() == d {
			continue
		}
		ev := session.Event{Type: r.Type(), Turn: r.Turn(), Step: r.Step(), Ignorable: r.Ignorable(), Data: json.RawMessage(r.Data())}
		src := r.Sources()
		for _, s := range src {
			if s != d {
				ev.Sources = append(ev.Sources, remap(s))
			}
		}
		if sf := r.Surface(); sf.Op == session.OpReplace {
			start, end := sf.Start, sf.End
			if i := slices.Index(src, d); i >= 0 {
				if start == d && i+1 < len(src) {
					start = src[i+1]
				}
				if end == d && i > 0 {
					end = src[i-1]
				}
			}
			ev.Surface = &session.Surface{Op: session.OpReplace, Start: remap(start), End: remap(end)}
		}
		nr, err := session.NewRecord(int64(len(out)), r.Time(), ev)
		if err != nil {
			return nil, fmt.Errorf("seq %d without seq %d: %w", r.Seq(), d, err)
		}
		out = append(out, nr)
	}
	return out, nil
}
