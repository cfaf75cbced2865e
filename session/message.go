package session

import "unsafe"

// Roles of derived messages.
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one provider-neutral message derived from the log by the
// fold. The system prompt is not a Message: it lives in the request
// [Header]. Messages are values; two are equal when every field is.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	Reasoning  string     `json:"reasoning,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// ToolCall is a complete tool call of an assistant message. Arguments is
// the JSON text exactly as the model produced it.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Equal reports whether m and o are the same message. It allocates nothing.
func (m *Message) Equal(o *Message) bool {
	if !same(m.Role, o.Role) || !same(m.Content, o.Content) || !same(m.Reasoning, o.Reasoning) ||
		!same(m.ToolCallID, o.ToolCallID) || !same(m.Name, o.Name) || len(m.ToolCalls) != len(o.ToolCalls) {
		return false
	}
	for i := range m.ToolCalls {
		a, b := &m.ToolCalls[i], &o.ToolCalls[i]
		if !same(a.ID, b.ID) || !same(a.Name, b.Name) || !same(a.Arguments, b.Arguments) {
			return false
		}
	}
	return true
}

// same is a == b, without a call when the two share their bytes: the
// messages a request is compared with (the loop's and the invariants
// plugin's folds, the seal's) are projections of the same immutable
// records, so they almost always do, and a check of a long conversation
// costs a few instructions per message. Reading the pointer changes
// nothing and keeps nothing.
func same(a, b string) bool {
	return len(a) == len(b) && (len(a) == 0 || unsafe.StringData(a) == unsafe.StringData(b) || a == b)
}

// CloneMessages returns a deep copy of msgs in two allocations: the
// messages, and one array for all their tool calls (each message's slice
// capped).
func CloneMessages(msgs []Message) []Message {
	if msgs == nil {
		return nil
	}
	out := make([]Message, len(msgs))
	copy(out, msgs)
	n := 0
	for i := range out {
		n += len(out[i].ToolCalls)
	}
	if n == 0 {
		return out
	}
	calls := make([]ToolCall, 0, n)
	for i := range out {
		if tc := out[i].ToolCalls; tc != nil {
			start := len(calls)
			calls = append(calls, tc...)
			out[i].ToolCalls = calls[start:len(calls):len(calls)]
		}
	}
	return out
}
