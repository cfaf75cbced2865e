package session

// turnState is where a log stands with respect to turns and steps after
// some prefix of it: which turn and step are open and, in the open step,
// which tool calls still wait for a result.
type turnState struct {
	turn    int // the open turn, 0 when none is open
	step    int // the open step, 0 when none is open
	pending []pendingCall
	// usage is the open step's step/usage: its reply's usage, logged
	// before it suspended, for the step/end that closes it.
	usage *Usage
}

type pendingCall struct {
	id      string
	name    string
	source  int64 // the tool/call, or the assistant message naming the call
	logged  bool  // a tool/call event was logged
	started bool  // a tool/start event was logged
}

// scanTurns returns the turn state after records. A turn/start resets
// the state, so only the records from the last one on are read.
func scanTurns(records []Record) turnState {
	from := 0
	for i := len(records) - 1; i >= 0; i-- {
		if records[i].typ == TypeTurnStart {
			from = i
			break
		}
	}
	var st turnState
	for _, r := range records[from:] {
		st.add(r)
	}
	return st
}

// add folds record r into the state.
func (st *turnState) add(r Record) {
	switch r.typ {
	case TypeTurnStart, TypeTurnEnd, TypeStepStart, TypeStepEnd:
		st.bound(r)
	case TypeStepUsage, TypeAssistantMessage, TypeToolCall, TypeToolStart, TypeToolResult:
		if st.inStep(r) {
			st.inside(r)
		}
	}
}

// bound opens or closes the turn or the step r starts or ends; an end
// of another turn or step than the open one changes nothing.
func (st *turnState) bound(r Record) {
	switch r.typ {
	case TypeTurnStart:
		st.turn, st.step, st.pending, st.usage = r.turn, 0, nil, nil
	case TypeTurnEnd:
		if r.turn == st.turn {
			st.turn, st.step, st.pending, st.usage = 0, 0, nil, nil
		}
	case TypeStepStart:
		if st.turn != 0 && r.turn == st.turn {
			st.step, st.pending, st.usage = r.step, nil, nil
		}
	case TypeStepEnd:
		if r.turn == st.turn && r.step == st.step {
			st.step, st.pending, st.usage = 0, nil, nil
		}
	}
}

// inside folds r, a record of the open step, into it: its usage, and
// each tool call from named (by the assistant message or a tool/call)
// to started and answered.
func (st *turnState) inside(r Record) {
	switch r.typ {
	case TypeStepUsage:
		if u, ok := r.pay().(Usage); ok {
			st.usage = &u
		}
	case TypeAssistantMessage:
		for _, c := range r.pay().(AssistantMessage).ToolCalls {
			if st.find(c.ID) < 0 {
				st.pending = append(st.pending, pendingCall{id: c.ID, name: c.Name, source: r.seq})
			}
		}
	case TypeToolCall:
		c := r.pay().(ToolCall)
		if i := st.find(c.ID); i >= 0 {
			st.pending[i].logged, st.pending[i].source, st.pending[i].name = true, r.seq, c.Name
		} else {
			st.pending = append(st.pending, pendingCall{id: c.ID, name: c.Name, source: r.seq, logged: true})
		}
	case TypeToolStart:
		if i := st.find(r.pay().(ToolStart).ID); i >= 0 {
			st.pending[i].started = true
		}
	case TypeToolResult:
		if i := st.find(r.pay().(ToolResult).ID); i >= 0 {
			st.pending = append(st.pending[:i:i], st.pending[i+1:]...)
		}
	}
}

func (st *turnState) inStep(r Record) bool {
	return st.step != 0 && r.turn == st.turn && r.step == st.step
}

func (st *turnState) find(id string) int {
	for i, c := range st.pending {
		if c.id == id {
			return i
		}
	}
	return -1
}

// Boundaries returns the seqs a log of records may be forked or seeded
// at, in order: -1 (before the first record) and every seq after which
// no turn is open.
func Boundaries(records []Record) []int64 {
	out := []int64{-1}
	var st turnState
	for i, r := range records {
		st.add(r)
		if st.turn == 0 {
			out = append(out, int64(i))
		}
	}
	return out
}
