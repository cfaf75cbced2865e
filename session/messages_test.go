package session_test

import (
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/session"
	"github.com/vigil-run/vigil/session/sessiontest"
)

// viewFold feeds events to a fold and returns it.
type viewFold struct {
	t    *testing.T
	fold *session.Fold
	seq  int64
}

func newViewFold(t *testing.T) *viewFold { return &viewFold{t: t, fold: session.NewFold()} }

func (f *viewFold) add(evs ...session.Event) {
	f.t.Helper()
	for _, ev := range evs {
		r, err := session.NewRecord(f.seq, time.Unix(1_700_000_000, 0), ev)
		require.NoError(f.t, err)
		require.NoError(f.t, f.fold.Add(r))
		f.seq++
	}
}

func call(i int) session.ToolCall {
	return session.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "f", Arguments: fmt.Sprintf(`{"i":%d}`, i)}
}

// A view is one unexported slice: reflect reads it but cannot set it or
// hand it out, so whoever holds a view can only replace their own.
func TestMessagesIsOneHiddenSlice(t *testing.T) {
	typ := reflect.TypeFor[session.Messages]()
	require.Equal(t, reflect.Struct, typ.Kind())
	require.Equal(t, 1, typ.NumField())
	assert.False(t, typ.Field(0).IsExported())
	assert.Equal(t, reflect.Slice, typ.Field(0).Type.Kind())

	m := session.NewMessages([]session.Message{{Role: session.RoleUser, Content: "hello"}})
	arr := reflect.ValueOf(&m).Elem().Field(0)
	assert.Equal(t, "hello", arr.Index(0).FieldByName("Content").String(), "reflect reads it")
	assert.False(t, arr.CanSet())
	assert.False(t, arr.Index(0).FieldByName("Content").CanSet())
	assert.Panics(t, func() { arr.Index(0).FieldByName("Content").SetString("forged") })
	assert.Panics(t, func() { _ = arr.Interface() })
	assert.Equal(t, "hello", m.At(0).Content)
}

// Everything a view hands out is the caller's: writing what At, All and
// Clone return, or what NewMessages was given, changes no view.
func TestMessagesHandOutCopies(t *testing.T) {
	src := []session.Message{
		{Role: session.RoleUser, Content: "q"},
		{Role: session.RoleAssistant, ToolCalls: []session.ToolCall{call(1), call(2)}},
		{Role: session.RoleTool, ToolCallID: "c1", Content: "r"},
	}
	want := session.CloneMessages(src)
	m := session.NewMessages(src)
	src[0].Content, src[1].ToolCalls[0].Arguments = "forged", "forged"
	assert.Equal(t, want, m.Clone(), "NewMessages copies")

	got := m.At(1)
	got.ToolCalls[0].Arguments = "forged"
	got.ToolCalls = append(got.ToolCalls, call(3))
	for _, msg := range m.All() {
		for i := range msg.ToolCalls {
			msg.ToolCalls[i].Name = "forged"
		}
	}
	c := m.Clone()
	c[1].ToolCalls[1].ID = "forged"
	c[2].Content = "forged"
	assert.Equal(t, want, m.Clone())
	assert.Equal(t, 3, m.Len())
	assert.True(t, m.Equal(session.NewMessages(want)))
}

// A fold's views share its array without a copy and never change: the
// fold appends past the end of every view, and a replace builds a new
// array. Views of the same array provably share their common prefix;
// views of different arrays share nothing, however equal.
func TestFoldViewsShareAndNeverChange(t *testing.T) {
	f := newViewFold(t)
	f.add(sessiontest.User("one"), sessiontest.Assistant("", call(1)), sessiontest.Result("c1", "r1"))
	first := f.fold.View()
	firstWant := first.Clone()
	for i := range 40 { // grows the array more than once
		f.add(sessiontest.User(fmt.Sprintf("q%d", i)), sessiontest.Assistant(fmt.Sprintf("a%d", i)))
	}
	grown := f.fold.View()
	assert.Equal(t, firstWant, first.Clone(), "an earlier view is unchanged by appends")
	assert.Equal(t, 83, grown.Len())
	assert.Equal(t, -1, grown.Diff(grown))

	before := f.fold.View()
	f.add(sessiontest.User("q"))
	after := f.fold.View()
	assert.Equal(t, before.Len(), after.SharedPrefix(before), "same array, grown")
	assert.Equal(t, before.Len(), before.SharedPrefix(after))
	assert.Equal(t, before.Len(), after.Diff(before), "after only adds")

	copied := session.NewMessages(after.Clone())
	assert.Zero(t, copied.SharedPrefix(after), "a copy shares nothing")
	assert.True(t, copied.Equal(after))

	f.add(sessiontest.Replace(0, 2, "summary", 0, 1, 2))
	replaced := f.fold.View()
	assert.Zero(t, replaced.SharedPrefix(after), "a replace builds a new array")
	assert.Equal(t, "summary", replaced.At(0).Content)
	assert.Equal(t, firstWant, first.Clone(), "and changes no earlier view")
	assert.Equal(t, "one", after.At(0).Content)
}

func TestMessagesDiff(t *testing.T) {
	base := []session.Message{{Role: session.RoleUser, Content: "a"}, {Role: session.RoleAssistant, ToolCalls: []session.ToolCall{call(1)}}}
	edited := session.CloneMessages(base)
	edited[1].ToolCalls[0].Arguments = "{}"
	for _, tc := range []struct {
		name string
		a, b []session.Message
		diff int
	}{
		{"equal", base, session.CloneMessages(base), -1},
		{"both empty", nil, []session.Message{}, -1},
		{"a tool call differs", base, edited, 1},
		{"a prefix", base, base[:1], 1},
		{"longer", base[:1], base, 1},
		{"first", base, []session.Message{{Role: session.RoleUser, Content: "b"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := session.NewMessages(tc.a), session.NewMessages(tc.b)
			assert.Equal(t, tc.diff, a.Diff(b))
			assert.Equal(t, tc.diff, b.Diff(a))
			assert.Equal(t, tc.diff < 0, a.Equal(b))
			for i := range tc.b {
				assert.Equal(t, i < len(tc.a) && tc.a[i].Equal(&tc.b[i]), a.EqualAt(i, &tc.b[i]))
			}
			assert.False(t, a.EqualAt(-1, &session.Message{}))
			assert.False(t, a.EqualAt(len(tc.a), &session.Message{}))
		})
	}
}

// A weak reference tells, like SharedPrefix, whether a later view shares
// its array, without keeping it.
func TestWeakMessages(t *testing.T) {
	f := newViewFold(t)
	f.add(sessiontest.User("one"), sessiontest.Assistant("two"))
	w := f.fold.View().Weak()
	assert.Equal(t, 2, w.Len())
	f.add(sessiontest.User("three"))
	assert.Equal(t, 2, w.SharedPrefix(f.fold.View()))
	assert.Zero(t, w.SharedPrefix(session.NewMessages(f.fold.View().Clone())))
	assert.Zero(t, session.WeakMessages{}.SharedPrefix(f.fold.View()))
	assert.Zero(t, session.Messages{}.Weak().SharedPrefix(f.fold.View()))
}

// A view encodes as the list it shows, as a []Message does.
func TestMessagesJSON(t *testing.T) {
	msgs := []session.Message{{Role: session.RoleUser, Content: "q"}, {Role: session.RoleAssistant, ToolCalls: []session.ToolCall{call(1)}}}
	want, err := json.Marshal(msgs)
	require.NoError(t, err)
	got, err := json.Marshal(session.NewMessages(msgs))
	require.NoError(t, err)
	assert.JSONEq(t, string(want), string(got))
	null, err := json.Marshal(session.Messages{})
	require.NoError(t, err)
	assert.Equal(t, "null", string(null))

	var back session.Messages
	require.NoError(t, json.Unmarshal(got, &back))
	assert.Equal(t, msgs, back.Clone())
	assert.Error(t, json.Unmarshal([]byte(`{"role":"user"}`), &back))
}

func FuzzMessagesJSON(f *testing.F) {
	f.Add([]byte(`[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c","name":"f","arguments":"{}"}]}]`))
	f.Add([]byte(`null`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var m session.Messages
		if json.Unmarshal(b, &m) != nil {
			return
		}
		out, err := json.Marshal(m)
		require.NoError(t, err)
		var again session.Messages
		require.NoError(t, json.Unmarshal(out, &again))
		assert.True(t, m.Equal(again))
		out2, err := json.Marshal(again)
		require.NoError(t, err)
		assert.Equal(t, string(out), string(out2))
	})
}
