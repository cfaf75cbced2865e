package scripted

import (
	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/session"
)

// inputSizes keeps, per session, the size of the last request's messages,
// so that the input estimate of a step costs its new messages, not the
// conversation: the stand-in model must not be what a benchmark of the
// loop measures as it grows. A request whose messages share their array
// with the view counted before has the same messages in the counted part
// (see session.Messages.SharedPrefix): the loop hands providers a view of
// its own fold, which only grows in place.
type inputSizes struct {
	bySession map[string]counted
}

// counted is how many bytes the messages of the view base refers to
// have. base is weak: the count never keeps a closed session's messages
// alive, and a collected array matches nothing.
type counted struct {
	base  session.WeakMessages
	bytes int
}

// maxCounted bounds the sessions remembered; past it, they are forgotten
// and counted whole again.
const maxCounted = 1024

// size returns the bytes of req's system prompt, message contents and
// tool-call arguments: what the estimate of input tokens is made from.
func (s *inputSizes) size(req *agentloop.Request) int {
	msgs := req.Messages
	c := s.bySession[req.Session]
	if c.base.SharedPrefix(msgs) < c.base.Len() {
		c = counted{}
	}
	for i := c.base.Len(); i < msgs.Len(); i++ {
		m := msgs.At(i)
		c.bytes += len(m.Content)
		for _, tc := range m.ToolCalls {
			c.bytes += len(tc.Arguments)
		}
	}
	if msgs.Len() > 0 && req.Session != "" {
		if s.bySession == nil || len(s.bySession) >= maxCounted {
			s.bySession = map[string]counted{}
		}
		c.base = msgs.Weak()
		s.bySession[req.Session] = c
	}
	return len(req.Header.System) + c.bytes
}
