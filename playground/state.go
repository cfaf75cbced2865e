package playground

import (
	"encoding/json"

	"github.com/vigil-run/vigil/session"
)

// stateView is what the page shows beside a log at one point: the
// messages the fold derives from it and the next request. Everything in it
// comes from the session package's fold; the page derives nothing.
type stateView struct {
	// Seq is the seq of the last record the state covers, -1 for none.
	Seq int64 `json:"seq"`
	// Messages is session.DeriveMessages of the log.
	Messages []messageView `json:"messages"`
	// Surface lists the seqs on the surface, in surface order: the events
	// the model sees. Surface events not in it were replaced (compacted).
	Surface []int64   `json:"surface"`
	Next    *nextView `json:"next"`
	// Suspended is what the log's suspended step waits for
	// (session.Suspended), nil when it waits for nothing.
	Suspended *suspensionView `json:"suspended,omitempty"`
	// Error is why the log does not fold, if it does not.
	Error string `json:"error,omitempty"`
}

// messageView is a derived message and the surface event it projects.
type messageView struct {
	session.Message
	Source int64 `json:"source"`
}

// nextView is the request the loop sends next: while a step is open, the
// request of that step (the fold of the log before its step/start); between
// steps, the request of the next turn's first step without its new user
// message, which the page shows apart.
type nextView struct {
	InFlight bool `json:"in_flight"`
	// TurnOpen: a turn has started and not ended, so no next turn can be
	// sent yet (the page disables its send button).
	TurnOpen bool `json:"turn_open"`
	Turn     int  `json:"turn"`
	Step     int  `json:"step"`
	// StepStart is the seq of the open step's step/start, -1 between steps.
	StepStart int64           `json:"step_start"`
	Header    *session.Header `json:"header"`
	Messages  []messageView   `json:"messages"`
}

// suspensionView is a step suspended on approvals: its calls that have
// an approval/request, decided or not.
type suspensionView struct {
	Turn  int           `json:"turn"`
	Step  int           `json:"step"`
	Calls []pendingView `json:"calls"`
}

// pendingView is one call of a suspended step, as the page shows it with
// its buttons while Decision is nil.
type pendingView struct {
	ID        string `json:"id"`
	Tool      string `json:"tool"`
	Arguments string `json:"arguments"`
	// Seq is the seq of the tool/call, RequestSeq of its approval/request.
	Seq        int64                     `json:"seq"`
	RequestSeq int64                     `json:"request_seq"`
	By         string                    `json:"by,omitempty"`
	Reason     string                    `json:"reason,omitempty"`
	Decision   *session.ApprovalDecision `json:"decision,omitempty"`
}

// suspensionOf returns the view of records' suspension, nil when the log
// is not suspended.
func suspensionOf(records []session.Record) *suspensionView {
	s := session.Suspended(records)
	if s == nil {
		return nil
	}
	out := &suspensionView{Turn: s.Turn, Step: s.Step, Calls: make([]pendingView, len(s.Calls))}
	for i, c := range s.Calls {
		out.Calls[i] = pendingView{ID: c.Call.ID, Tool: c.Call.Name, Arguments: c.Call.Arguments, Seq: c.CallSeq,
			RequestSeq: c.RequestSeq, By: c.Request.By, Reason: c.Request.Reason, Decision: c.Decision}
	}
	return out
}

// derive computes the state of records, a valid log from seq 0.
func derive(records []session.Record) stateView {
	st := stateView{Seq: int64(len(records)) - 1, Messages: []messageView{}, Surface: []int64{}}
	msgs, surface, err := fold(records)
	if err != nil {
		st.Error = err.Error()
		return st
	}
	st.Messages, st.Surface = msgs, surface

	next := &nextView{StepStart: -1, Messages: msgs}
	lastTurn, open := 0, int64(-1)
	for _, r := range records {
		switch r.Type() {
		case session.TypeTurnStart:
			lastTurn = r.Turn()
			next.TurnOpen = true
		case session.TypeTurnEnd:
			next.TurnOpen = false
		case session.TypeStepStart:
			open = r.Seq()
		case session.TypeStepEnd:
			open = -1
		}
	}
	if open >= 0 {
		r := records[open]
		next.InFlight, next.Turn, next.Step, next.StepStart = true, r.Turn(), r.Step(), open
		if next.Messages, _, err = fold(records[:open]); err != nil {
			st.Error = err.Error()
			return st
		}
	} else {
		next.Turn, next.Step = lastTurn+1, 1
	}
	if h, ok := session.DeriveHeader(records); ok {
		next.Header = &h
	}
	st.Next = next
	st.Suspended = suspensionOf(records)
	return st
}

// fold returns session.DeriveMessages of records, each message with the
// seq of the surface event it projects, and the surface.
func fold(records []session.Record) ([]messageView, []int64, error) {
	msgs, err := session.DeriveMessages(records)
	if err != nil {
		return nil, nil, err
	}
	f := session.NewFold()
	for _, r := range records {
		if err := f.Add(r); err != nil {
			return nil, nil, err
		}
	}
	surface := f.Surface()
	out := make([]messageView, len(msgs))
	i := 0
	for _, seq := range surface {
		if i == len(msgs) || !projects(records[seq]) {
			continue
		}
		out[i] = messageView{Message: msgs[i], Source: seq}
		i++
	}
	for ; i < len(msgs); i++ {
		out[i] = messageView{Message: msgs[i], Source: -1}
	}
	return out, surface, nil
}

// projects reports whether a surface record yields a message: an
// assistant message with neither content nor tool calls yields none.
func projects(r session.Record) bool {
	if r.Type() != session.TypeAssistantMessage {
		return true
	}
	m, err := session.DecodeData[session.AssistantMessage](r)
	return err == nil && (m.Content != "" || len(m.ToolCalls) > 0)
}

// rawRecords returns the canonical lines of records, as the page reads them.
func rawRecords(records []session.Record) []json.RawMessage {
	out := make([]json.RawMessage, len(records))
	for i, r := range records {
		out[i] = r.Bytes()
	}
	return out
}
