package session

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
	if m.Role != o.Role || m.Content != o.Content || m.Reasoning != o.Reasoning ||
		m.ToolCallID != o.ToolCallID || m.Name != o.Name || len(m.ToolCalls) != len(o.ToolCalls) {
		return false
	}
	for i := range m.ToolCalls {
		if m.ToolCalls[i] != o.ToolCalls[i] {
			return false
		}
	}
	return true
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
