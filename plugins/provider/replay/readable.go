package replay

import (
	"encoding/json"
	"fmt"

	"github.com/vigil-run/vigil/session"
)

// readable returns the log recs as a reader without the plugins of its
// ignorable records reads it: without them, wherever they stand (inside
// a step as well as between turns), every other record renumbered to its
// position, and the seqs a record names (its sources, a replace's range,
// a decision's cites) renumbered alike; sources that named a dropped
// record are dropped. An ignorable record is never a surface record, so
// the fold, every request and every digest are the log's. orig maps each
// index of the result to the seq of its record in recs; both are recs
// itself and nil when it holds no ignorable record.
//
// A rerun follows the recording record by record, and its log holds no
// plugin records: so every reader of a recording here reads this.
func readable(recs []session.Record) (out []session.Record, orig []int64, err error) {
	kept := make(map[int64]int64, len(recs))
	for _, r := range recs {
		if !r.Ignorable() {
			kept[r.Seq()] = int64(len(orig))
			orig = append(orig, r.Seq())
		}
	}
	if len(orig) == len(recs) {
		return recs, nil, nil
	}
	out = make([]session.Record, 0, len(orig))
	for _, r := range recs {
		if r.Ignorable() {
			continue
		}
		ev := session.Event{Type: r.Type(), Turn: r.Turn(), Step: r.Step(), Data: json.RawMessage(r.Data())}
		for _, s := range r.Sources() {
			if n, ok := kept[s]; ok {
				ev.Sources = append(ev.Sources, n)
			}
		}
		if sf := r.Surface(); sf.Op == session.OpReplace {
			sf.Start, sf.End = kept[sf.Start], kept[sf.End]
			ev.Surface = &sf
		}
		if r.Type() == session.TypeApprovalDecision {
			if ev.Data, err = renumberCites(r, kept); err != nil {
				return nil, nil, err
			}
		}
		nr, err := session.NewRecord(int64(len(out)), r.Time(), ev)
		if err != nil {
			return nil, nil, fmt.Errorf("replay: seq %d without the ignorable records before it: %w", r.Seq(), err)
		}
		out = append(out, nr)
	}
	return out, orig, nil
}

// renumberCites returns the data of decision r with its cites renumbered.
func renumberCites(r session.Record, kept map[int64]int64) (any, error) {
	d, err := session.DecodeData[session.ApprovalDecision](r)
	if err != nil {
		return nil, fmt.Errorf("replay: seq %d: %w", r.Seq(), err)
	}
	if d.Cites == 0 {
		return json.RawMessage(r.Data()), nil
	}
	d.Cites = kept[d.Cites]
	return d, nil
}

// seqIn returns the seq in the recorded log of the record at index i of
// its readable form (see readable).
func seqIn(orig []int64, i int64) int64 {
	if orig == nil || i < 0 || i >= int64(len(orig)) {
		return i
	}
	return orig[i]
}

// indexIn returns the index in the readable form of the record at seq in
// the recorded log, or of the first kept record after it.
func indexIn(orig []int64, seq int) int {
	if orig == nil {
		return seq
	}
	for i, s := range orig {
		if s >= int64(seq) {
			return i
		}
	}
	return len(orig)
}
