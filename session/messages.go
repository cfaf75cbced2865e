package session

import (
	"encoding/json"
	"iter"
	"slices"
	"weak"
)

// Messages is a read-only list of messages: what a model request carries
// (agentloop.Request.Messages). Its array is unexported and nothing of it
// is handed out that could write it: [Messages.At] and [Messages.All]
// return values whose tool calls are the caller's own copy, and
// [Messages.Clone] a deep copy. So whoever holds a Messages (a provider,
// an llm/stream listener) can read it but cannot change what anyone else
// holding it sees.
//
// That is why the agent loop can hand providers and listeners a view of
// its own fold without copying it ([Fold.View]), and why two views that
// share their array provably hold the same leading messages
// ([Messages.SharedPrefix]): the array is written only by the fold that
// made it, and only past the end of every view it made.
//
// The zero value is an empty list.
type Messages struct {
	ms []Message // never written once a view holds it
}

// NewMessages returns a view of a copy of ms (see [CloneMessages]): what
// the caller does to ms afterwards does not reach it. Requests built
// outside the loop (one-shots, tests) are made with it.
func NewMessages(ms []Message) Messages { return Messages{ms: CloneMessages(ms)} }

// View returns a read-only view of the fold's messages as they are now,
// without copying them: the fold never writes a message it made (it grows
// its array past the end of every view, and a replace builds a new one).
func (f *Fold) View() Messages { return Messages{ms: f.Messages()} }

// Len returns the number of messages.
func (m Messages) Len() int { return len(m.ms) }

// At returns message i (it panics, as an index does, when i is out of
// range). Its tool calls are a copy of the caller's own.
func (m Messages) At(i int) Message { return own(m.ms[i]) }

// All yields each message with its index, as [Messages.At] returns it.
func (m Messages) All() iter.Seq2[int, Message] {
	return func(yield func(int, Message) bool) {
		for i := range m.ms {
			if !yield(i, own(m.ms[i])) {
				return
			}
		}
	}
}

// Clone returns a deep copy of the messages, the caller's to write: nil
// for an empty list.
func (m Messages) Clone() []Message {
	if len(m.ms) == 0 {
		return nil
	}
	return CloneMessages(m.ms)
}

// Equal reports whether m and o hold equal messages (see [Message.Equal]).
// Views that share their array are compared only past what they share.
func (m Messages) Equal(o Messages) bool { return len(m.ms) == len(o.ms) && m.Diff(o) < 0 }

// Diff returns the index of the first message that differs between m and
// o, len of the shorter when one is a prefix of the other, or -1 when they
// are equal. What the two views share ([Messages.SharedPrefix]) is not
// compared. It allocates nothing.
func (m Messages) Diff(o Messages) int {
	n := min(len(m.ms), len(o.ms))
	for i := m.SharedPrefix(o); i < n; i++ {
		if !m.ms[i].Equal(&o.ms[i]) {
			return i
		}
	}
	if len(m.ms) != len(o.ms) {
		return n
	}
	return -1
}

// EqualAt reports whether message i of m equals x, without copying
// anything; false when i is out of range.
func (m Messages) EqualAt(i int, x *Message) bool {
	return i >= 0 && i < len(m.ms) && m.ms[i].Equal(x)
}

// SharedPrefix returns how many leading messages m and o provably hold in
// common without comparing them: the length of the shorter when both are
// views of the same array (which no one writes), else 0.
func (m Messages) SharedPrefix(o Messages) int {
	if len(m.ms) == 0 || len(o.ms) == 0 || &m.ms[0] != &o.ms[0] {
		return 0
	}
	return min(len(m.ms), len(o.ms))
}

// WeakMessages remembers a view without keeping its messages alive: a
// memo of what was done with a session's last request (counted, checked)
// holds one, so that it never keeps a closed session's conversation in
// memory. It hands out nothing of the messages.
type WeakMessages struct {
	first weak.Pointer[Message]
	n     int
}

// Weak returns a weak reference to m.
func (m Messages) Weak() WeakMessages {
	if len(m.ms) == 0 {
		return WeakMessages{}
	}
	return WeakMessages{first: weak.Make(&m.ms[0]), n: len(m.ms)}
}

// Len returns the length of the view w refers to.
func (w WeakMessages) Len() int { return w.n }

// SharedPrefix is [Messages.SharedPrefix] of the view w refers to and m:
// 0 once that view's messages were collected.
func (w WeakMessages) SharedPrefix(m Messages) int {
	if w.n == 0 || len(m.ms) == 0 || w.first.Value() != &m.ms[0] {
		return 0
	}
	return min(w.n, len(m.ms))
}

// MarshalJSON encodes the messages as a JSON array (null for a nil list),
// as a []Message encodes.
func (m Messages) MarshalJSON() ([]byte, error) { return json.Marshal(m.ms) }

// UnmarshalJSON makes m a view of the decoded messages.
func (m *Messages) UnmarshalJSON(b []byte) error {
	var ms []Message
	if err := json.Unmarshal(b, &ms); err != nil {
		return err
	}
	*m = Messages{ms: ms}
	return nil
}

// own returns msg with tool calls of its own.
func own(msg Message) Message {
	if msg.ToolCalls != nil {
		msg.ToolCalls = slices.Clip(slices.Clone(msg.ToolCalls))
	}
	return msg
}
