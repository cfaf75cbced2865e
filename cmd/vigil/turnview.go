package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/config"
	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/live"
)

// turnView shows one turn as it happens: the answer streamed to stdout
// (when stream is set), a line on stderr for each tool call the model
// makes and for each that fails, and on the status line the waits: for
// the model at each step, and for each tool while it runs. It reads the
// tool calls from the session's log as it is committed, so what it shows
// is what is logged.
type turnView struct {
	st     *status
	stream bool
	sess   string

	mu      sync.Mutex
	answer  string            // the content of the latest assistant message
	model   func()            // ends the wait for the model; nil when not waiting
	names   map[string]string // tool name by call id
	running map[string]func() // ends the task of a running call, by id
	dispose func()
}

// watchTurn starts showing the turn on sess; call close when it is over.
func watchTurn(c *bus.Context, st *status, sess string, stream bool) *turnView {
	v := &turnView{st: st, stream: stream, sess: sess, names: map[string]string{}, running: map[string]func(){}}
	v.dispose = live.Committed.On(c, func(_ context.Context, cm live.Commit) error {
		v.mu.Lock()
		mine := cm.Session().ID() == v.sess
		v.mu.Unlock()
		if mine {
			v.record(cm.Record())
		}
		return nil
	})
	return v
}

// follow makes the view show the turn of session id: a turn that starts
// a session knows its id only once the session is open.
func (v *turnView) follow(id string) {
	v.mu.Lock()
	v.sess = id
	v.mu.Unlock()
}

// knows tells the view the tool calls of a step logged before it started
// (a suspended step resumed): their results are named by their tools.
func (v *turnView) knows(calls []session.PendingCall) {
	v.mu.Lock()
	for _, c := range calls {
		v.names[c.Call.ID] = c.Call.Name
	}
	v.mu.Unlock()
}

// chunk is the turn's chunk callback.
func (v *turnView) chunk(c agentloop.Chunk) {
	v.endModel()
	if v.stream && c.Text != "" {
		v.st.text(c.Text)
	}
	if tc := c.ToolCall; tc != nil && tc.Name != "" {
		v.st.note("→ %s", tc.Name)
	}
}

// record follows the records of the turn.
func (v *turnView) record(r session.Record) {
	switch r.Type() {
	case session.TypeStepStart:
		v.mu.Lock()
		if v.model == nil {
			v.model = v.st.begin("waiting for the model")
		}
		v.mu.Unlock()
	case session.TypeAssistantMessage:
		v.endModel()
		if m, err := session.DecodeData[session.AssistantMessage](r); err == nil {
			v.mu.Lock()
			v.answer = m.Content
			v.mu.Unlock()
		}
	case session.TypeStepEnd, session.TypeTurnEnd:
		v.endModel()
	case session.TypeUserMessage:
		// The loop's feedback on an answer the output schema refused: a
		// streamed answer is followed by another, on a line of its own; one
		// not streamed (vigil run keeps stdout for the accepted answer) is
		// shown here.
		if m, err := session.DecodeData[session.UserMessage](r); err == nil && m.Origin == session.OriginOutputValidation {
			v.mu.Lock()
			refused := v.answer
			v.mu.Unlock()
			if v.stream {
				v.st.note("↻ the answer does not match the output schema; asking the model again")
			} else {
				v.st.note("↻ the answer does not match the output schema; asking the model again. The refused answer:\n%s", refused)
			}
		}
	case session.TypeToolCall:
		if c, err := session.DecodeData[session.ToolCall](r); err == nil {
			v.mu.Lock()
			v.names[c.ID] = c.Name
			v.mu.Unlock()
		}
	case session.TypeToolStart:
		if s, err := session.DecodeData[session.ToolStart](r); err == nil {
			v.mu.Lock()
			v.running[s.ID] = v.st.begin("running " + v.nameLocked(s.ID))
			v.mu.Unlock()
		}
	case session.TypeToolResult:
		res, err := session.DecodeData[session.ToolResult](r)
		if err != nil {
			return
		}
		v.mu.Lock()
		end, name := v.running[res.ID], v.nameLocked(res.ID)
		delete(v.running, res.ID)
		v.mu.Unlock()
		if end != nil {
			end()
		}
		if e := res.Error; e != nil {
			msg := e.Code
			if e.Message != "" {
				msg += ": " + e.Message
			}
			v.st.note("✗ %s failed: %s", name, msg)
		}
	}
}

func (v *turnView) nameLocked(id string) string {
	if n := v.names[id]; n != "" {
		return n
	}
	return "tool call " + id
}

func (v *turnView) endModel() {
	v.mu.Lock()
	end := v.model
	v.model = nil
	v.mu.Unlock()
	if end != nil {
		end()
	}
}

// close stops showing the turn and ends its answer's line.
func (v *turnView) close() {
	v.dispose()
	v.endModel()
	v.mu.Lock()
	ends := v.running
	v.running = map[string]func(){}
	v.mu.Unlock()
	for _, end := range ends {
		end()
	}
	if v.stream {
		v.st.endLine()
	}
}

// startingEntry is the config.OnEntry hook of a host: the status line
// names the entry being applied (an MCP server or a plugin process takes
// seconds to start).
func startingEntry(st *status) config.ApplyOption {
	return config.OnEntry(func(e config.Entry) func(error) {
		label := "starting " + e.ID
		if e.ID != e.Name {
			label += " (" + e.Name + ")"
		}
		end := st.begin(label)
		return func(error) { end() }
	})
}

// waitLease shows the wait for session id's lease, held by another as
// err (an ErrLocked error) says, until end is called: on the status line
// with its holder and, for a lease that expires, the time left; where
// there is no status line, as one line, unless quiet.
func waitLease(e *env, st *status, id string, err error) (end func()) {
	if !st.live {
		if !e.quiet {
			st.note("waiting for session %s: %v", id, err)
		}
		return func() {}
	}
	since := st.now()
	label := leaseLabel(id, err)
	return st.beginFunc(func(now time.Time) string { return label(now) + " " + elapsed(now.Sub(since)) })
}

// leaseLabel says whom a wait for session id's lease waits for, at now.
func leaseLabel(id string, err error) func(now time.Time) string {
	holder, expires := "another process", time.Time{}
	var le *session.LockError
	if errors.As(err, &le) {
		holder, expires = le.Holder, le.Expires
	}
	return func(now time.Time) string {
		s := fmt.Sprintf("waiting for session %s, held by %s", id, holder)
		switch left := expires.Sub(now); {
		case expires.IsZero():
		case left > 0:
			s += fmt.Sprintf(" (its lease expires in %s unless renewed)", left.Round(time.Second))
		default:
			s += " (its holder renewed the lease)"
		}
		return s
	}
}
