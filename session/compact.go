package session

// BalancedRange returns the surface range nearest to start..end (seqs) that
// a compaction may replace without separating a tool call from its result:
// every assistant message in the range has all its tool results in the
// range, and every tool result in the range has its assistant message in
// it.
//
// start snaps to the first surface event, in surface order, whose seq is
// at least start, and end to the last one whose seq is at most end. The
// range then grows outwards to take in the partners of the calls and
// results it holds; if it would have to take in a call whose result is
// not on the surface yet (a step in flight), it ends before that call's
// assistant message instead. The result is inclusive; when no balanced,
// non-empty range is left it is (-1, -1).
func BalancedRange(records []Record, start, end int64) (int64, int64) {
	var f Fold
	for _, r := range records {
		if f.Add(r) != nil {
			return -1, -1
		}
	}
	surf := f.surface
	lo, hi := -1, -1
	for i, r := range surf {
		if lo < 0 && r.seq >= start {
			lo = i
		}
		if r.seq <= end {
			hi = i
		}
	}
	if lo < 0 || hi < lo {
		return -1, -1
	}

	// Where each call is asked for and answered, by surface position.
	callAt := map[string]int{}
	resultAt := map[string]int{}
	for i, r := range surf {
		switch p := r.pay().(type) {
		case AssistantMessage:
			for _, c := range p.ToolCalls {
				callAt[c.ID] = i
			}
		case ToolResult:
			resultAt[p.ID] = i
		}
	}
	// limit only falls and lo only falls, and hi only grows up to limit,
	// so this terminates.
	limit := len(surf) - 1
	for changed := true; changed && lo <= hi; {
		changed = false
	scan:
		for i := lo; i <= hi; i++ {
			switch p := surf[i].pay().(type) {
			case AssistantMessage:
				for _, c := range p.ToolCalls {
					j, ok := resultAt[c.ID]
					if !ok || j > limit {
						// Unanswered: the range must end before this message.
						limit = i - 1
						hi = min(hi, limit)
						changed = true
						break scan
					}
					if j > hi {
						hi, changed = j, true
					}
				}
			case ToolResult:
				if j, ok := callAt[p.ID]; ok && j < lo {
					lo, changed = j, true
					break scan
				}
			}
		}
	}
	if lo > hi {
		return -1, -1
	}
	return surf[lo].seq, surf[hi].seq
}
