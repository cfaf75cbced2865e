package bus_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

func only(subject string) func(any) bool {
	return func(s any) bool { return s == subject }
}

func TestScopedListenerReceivesOnlyItsSubject(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	scoped := root.Context().Scope(only("a"))
	noteEvent.On(scoped, func(_ context.Context, n *note) error { tr.add("scoped " + n.Text); return nil })
	for _, s := range []string{"a", "b", "a"} {
		require.NoError(t, noteEvent.Emit(bg, root.Context(), &note{s}))
	}
	assert.Equal(t, []string{"scoped a", "scoped a"}, tr.get())
}

func TestScopedListenerSkipsDispatchWithoutSubject(t *testing.T) {
	root := newRoot(t)
	ev := bus.NewEvent[int]("test/no-subject")
	tr := &trace{}
	ev.On(root.Context().Scope(only("a")), func(context.Context, int) error { tr.add("scoped"); return nil })
	ev.On(root.Context(), func(context.Context, int) error { tr.add("unscoped"); return nil })
	require.NoError(t, ev.Emit(bg, root.Context(), 1))
	assert.Equal(t, []string{"unscoped"}, tr.get())
}

func TestGlobalListenerUnderScopedContextSeesEverySubject(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	scoped := root.Context().Scope(only("a"))
	noteEvent.On(scoped, func(_ context.Context, n *note) error { tr.add("global " + n.Text); return nil }, bus.Global)
	for _, s := range []string{"a", "b"} {
		require.NoError(t, noteEvent.Emit(bg, root.Context(), &note{s}))
	}
	assert.Equal(t, []string{"global a", "global b"}, tr.get())
}

func TestPluginUnderScopedContextInheritsFilter(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	apply(t, root.Context().Scope(only("a")), plugin("scoped", func(c *bus.Context) error {
		noteEvent.On(c, func(_ context.Context, n *note) error { tr.add("plugin " + n.Text); return nil })
		noteEvent.On(c, func(_ context.Context, n *note) error { tr.add("global " + n.Text); return nil }, bus.Global)
		return nil
	}), nil)
	for _, s := range []string{"a", "b"} {
		require.NoError(t, noteEvent.Emit(bg, root.Context(), &note{s}))
	}
	assert.Equal(t, []string{"plugin a", "global a", "global b"}, tr.get())
}

func TestNestedScopesCombineFilters(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	short := root.Context().Scope(func(s any) bool { return len(s.(string)) == 1 })
	both := short.Scope(func(s any) bool { return s != "b" })
	noteEvent.On(both, func(_ context.Context, n *note) error { tr.add(n.Text); return nil })
	for _, s := range []string{"a", "b", "cc"} {
		require.NoError(t, noteEvent.Emit(bg, root.Context(), &note{s}))
	}
	assert.Equal(t, []string{"a"}, tr.get())
	assert.Same(t, both, both.Scope(nil))
}

func TestScopeAppliesToEveryDispatchMode(t *testing.T) {
	root := newRoot(t)
	scoped := root.Context().Scope(only("a"))
	hook := bus.NewHook[*note, string]("test/scoped-hook")
	fall := bus.NewWaterfall[*note, string]("test/scoped-fall")
	hook.On(scoped, func(_ context.Context, n *note) (string, error) { return "scoped " + n.Text, nil })
	fall.On(scoped, func(_ context.Context, n *note, _ bus.Next[*note, string]) (string, error) {
		return "scoped " + n.Text, nil
	})
	fallback := func(_ context.Context, n *note) (string, error) { return "fallback " + n.Text, nil }
	for _, s := range []string{"a", "b"} {
		got, err := hook.Serial(bg, root.Context(), &note{s})
		require.NoError(t, err)
		want := map[string]string{"a": "scoped a", "b": ""}[s]
		assert.Equal(t, want, got)
		got, err = fall.Run(bg, root.Context(), &note{s}, fallback)
		require.NoError(t, err)
		want = map[string]string{"a": "scoped a", "b": "fallback b"}[s]
		assert.Equal(t, want, got)
	}
	tr := &trace{}
	noteEvent.On(scoped, func(_ context.Context, n *note) error { tr.add(n.Text); return nil })
	require.NoError(t, noteEvent.Parallel(bg, root.Context(), &note{"b"}))
	require.NoError(t, noteEvent.Observe(bg, root.Context(), &note{"b"}))
	require.NoError(t, noteEvent.Parallel(bg, root.Context(), &note{"a"}))
	assert.Equal(t, []string{"a"}, tr.get())
}

func TestReceivesSaysWhatAListenerOfTheContextReceives(t *testing.T) {
	root := newRoot(t)
	scoped := root.Context().Scope(only("a"))
	for _, tc := range []struct {
		c       *bus.Context
		subject any
		want    bool
	}{
		{root.Context(), "a", true},
		{root.Context(), nil, true},
		{scoped, "a", true},
		{scoped, "b", false},
		{scoped, nil, false},
	} {
		tr := &trace{}
		ev := bus.NewEvent[bus.Dispatch]("test/receives")
		dispose := ev.On(tc.c, func(context.Context, bus.Dispatch) error { tr.add("got"); return nil })
		require.NoError(t, ev.Emit(bg, root.Context(), bus.Dispatch{Payload: subjectOnly{tc.subject}}))
		dispose()
		assert.Equal(t, tc.want, len(tr.get()) == 1, "subject %v", tc.subject)
		assert.Equal(t, tc.want, tc.c.Receives(tc.subject), "subject %v", tc.subject)
	}
}

// subjectOnly is a payload that names subject (nil: none).
type subjectOnly struct{ subject any }

func (s subjectOnly) Subject() any { return s.subject }
