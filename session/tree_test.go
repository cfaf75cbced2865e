package session_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/memory"
)

// delegation is a parent log whose call c1 (seq 5) of the tool research
// (with the default parameters) a child answered with content, naming
// child at childSeq.
func delegation(t *testing.T, content string, child *session.ChildRef) *session.Log {
	return delegationWith(t, "research", session.TaskParameters, content, child)
}

// delegationWith is delegation with the header offering tool with params.
func delegationWith(t *testing.T, tool string, params json.RawMessage, content string, child *session.ChildRef) *session.Log {
	call := session.ToolCall{ID: "c1", Name: "research", Arguments: `{"task":"q"}`}
	h := session.Header{Tools: []session.ToolSpec{{Name: tool, Parameters: params}}}
	return &session.Log{Info: session.Info{ID: "p"}, Records: records(t,
		session.Event{Type: session.TypeTurnStart, Turn: 1},
		session.Event{Type: session.TypeStepStart, Turn: 1, Step: 1},
		session.Event{Type: session.TypeRequestHeader, Turn: 1, Data: session.RequestHeader{Reason: session.HeaderInitial, Header: h}},
		session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{ToolCall: &session.ChunkToolCall{ID: "c1", Name: "research", Arguments: `{"task":"q"}`}}},
		session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Sources: []int64{3}, Data: session.AssistantMessage{ToolCalls: []session.ToolCall{call}}},
		session.Event{Type: session.TypeToolCall, Turn: 1, Step: 1, Data: call},
		session.Event{Type: session.TypeToolResult, Turn: 1, Step: 1, Sources: []int64{5}, Data: session.ToolResult{ID: "c1", Name: "research", Content: content, Child: child}},
	)}
}

func childLog(t *testing.T, parent session.Parent, answer string) *session.Log {
	return childWith(t, "k", parent, "q", answer)
}

func childWith(t *testing.T, id string, parent session.Parent, task, answer string) *session.Log {
	return &session.Log{Info: session.Info{ID: id, Parent: &parent}, Records: records(t,
		session.Event{Type: session.TypeTurnStart, Turn: 1},
		session.Event{Type: session.TypeUserMessage, Turn: 1, Data: session.UserMessage{Content: task}},
		session.Event{Type: session.TypeStepStart, Turn: 1, Step: 1},
		session.Event{Type: session.TypeAssistantChunk, Turn: 1, Step: 1, Data: session.AssistantChunk{Text: answer}},
		session.Event{Type: session.TypeAssistantMessage, Turn: 1, Step: 1, Sources: []int64{3}, Data: session.AssistantMessage{Content: answer}},
		session.Event{Type: session.TypeStepEnd, Turn: 1, Step: 1, Data: session.StepEnd{Finish: session.FinishStop}},
		session.Event{Type: session.TypeTurnEnd, Turn: 1, Data: session.TurnEnd{Reason: session.ReasonCompleted}},
	)}
}

func TestCheckDelegations(t *testing.T) {
	good := session.Parent{ID: "p", Seq: 5, Call: "c1"}
	ref := &session.ChildRef{ID: "k", Seq: 6}
	custom := json.RawMessage(`{"properties":{"task":{"type":"string"}},"type":"object"}`)
	tests := []struct {
		name     string
		parent   *session.Log
		children map[string]*session.Log
		want     string // "" for none
	}{
		{"the result is the child's final message", delegation(t, "found", ref), map[string]*session.Log{"k": childLog(t, good, "found")}, ""},
		{"content differs", delegation(t, "made up", ref), map[string]*session.Log{"k": childLog(t, good, "found")}, "is not the child's final message"},
		{"the child answers another call", delegation(t, "found", ref), map[string]*session.Log{"k": childLog(t, session.Parent{ID: "p", Seq: 5, Call: "c2"}, "found")}, "the child's header names parent"},
		{"the child is missing", delegation(t, "found", ref), nil, "no log of the child session was found"},
		{"the child's log is shorter", delegation(t, "found", &session.ChildRef{ID: "k", Seq: 9}), map[string]*session.Log{"k": childLog(t, good, "found")}, "the child log has seqs 0..6"},
		{"a result that does not name its child", delegation(t, "found", nil), map[string]*session.Log{"k": childLog(t, good, "found")}, "does not name the child"},
		{"a second child for the call", delegation(t, "found", ref), map[string]*session.Log{"k": childLog(t, good, "found"), "a": childWith(t, "a", good, "q", "found")}, "call c1 already started child session k"},
		{"the child's task edited", delegation(t, "found", ref), map[string]*session.Log{"k": childWith(t, "k", good, "another task", "found")}, `the child's first user message "another task" is not the task its call passed "q"`},
		{"a child of no call", delegation(t, "found", ref), map[string]*session.Log{"k": childLog(t, good, "found"), "a": childWith(t, "a", session.Parent{ID: "p", Seq: 4, Call: "c1"}, "q", "found")}, "seq 4 of the parent, which is no tool/call"},
		{"custom parameters pass the arguments", delegationWith(t, "research", custom, "found", ref), map[string]*session.Log{"k": childWith(t, "k", good, `{"task":"q"}`, "found")}, ""},
		{"custom parameters, the task alone", delegationWith(t, "research", custom, "found", ref), map[string]*session.Log{"k": childLog(t, good, "found")}, `is not the task its call passed "{\"task\":\"q\"}"`},
		{"no tool of that name in force", delegationWith(t, "other", session.TaskParameters, "found", ref), map[string]*session.Log{"k": childLog(t, good, "found")}, `offers no tool "research"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs, checked := session.CheckDelegations(tt.parent, tt.children)
			if tt.want == "" {
				assert.Empty(t, errs)
				assert.Equal(t, 1, checked)
				return
			}
			require.Len(t, errs, 1, "%v", errs)
			assert.Contains(t, errs[0].Error(), tt.want)
		})
	}
	// Two children for one call that the result names neither of: the
	// first is the call's, answered without being named; the second is
	// one child too many.
	errs, _ := session.CheckDelegations(delegation(t, "found", nil), map[string]*session.Log{"k": childLog(t, good, "found"), "a": childWith(t, "a", good, "q", "found")})
	require.Len(t, errs, 2)
	assert.Equal(t, "session p seq 6: delegation to a: the result of c1 does not name the child that answers it", errs[0].Error())
	assert.Equal(t, "session p seq 5: delegation to k: call c1 already started child session a: a call starts one child", errs[1].Error())
}

func TestLoadTreeOrdersChildrenByCallAndLeavesForksOut(t *testing.T) {
	ctx := context.Background()
	st := memory.New()
	for _, in := range []session.Info{
		{ID: "p", Created: epoch},
		{ID: "k2", Created: epoch, Parent: &session.Parent{ID: "p", Seq: 9, Call: "c2"}},
		{ID: "k1", Created: epoch, Parent: &session.Parent{ID: "p", Seq: 4, Call: "c1"}},
		{ID: "g", Created: epoch, Parent: &session.Parent{ID: "k1", Seq: 3, Call: "c9"}},
	} {
		require.NoError(t, st.Create(ctx, in))
	}
	require.NoError(t, st.Fork(ctx, session.Info{ID: "f", Created: epoch, Parent: &session.Parent{ID: "p", Seq: -1}}, nil))
	tree, err := session.LoadTree(ctx, st, "p")
	require.NoError(t, err)
	var got []string
	tree.Walk(func(n *session.Tree, depth int) { got = append(got, string(rune('0'+depth))+n.Info.ID) })
	assert.Equal(t, []string{"0p", "1k1", "2g", "1k2"}, got)
	_, err = session.LoadTree(ctx, st, "nope")
	assert.ErrorIs(t, err, session.ErrNotFound)
}
