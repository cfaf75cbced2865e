package bus_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

// note is a payload whose subject is its text.
type note struct{ Text string }

func (n *note) Subject() any { return n.Text }

var (
	noteEvent = bus.NewEvent[*note]("test/note")
	bg        = context.Background()
)

// recordAs returns a listener recording name in tr.
func recordAs(tr *trace, name string) func(context.Context, *note) error {
	return func(context.Context, *note) error { tr.add(name); return nil }
}

func TestEmitDeliversTypedPayload(t *testing.T) {
	root := newRoot(t)
	var got *note
	noteEvent.On(root.Context(), func(_ context.Context, n *note) error { got = n; return nil })
	sent := &note{"hello"}
	require.NoError(t, noteEvent.Emit(bg, root.Context(), sent))
	assert.Same(t, sent, got)
	assert.Equal(t, "test/note", noteEvent.Name())
}

func TestEventKeysOfOneNameShareListeners(t *testing.T) {
	root := newRoot(t)
	again := bus.NewEvent[*note]("test/note")
	tr := &trace{}
	noteEvent.On(root.Context(), recordAs(tr, "a"))
	require.NoError(t, again.Emit(bg, root.Context(), &note{}))
	assert.Equal(t, []string{"a"}, tr.get())
}

func TestEventKeyWithOtherPayloadTypePanics(t *testing.T) {
	assert.Panics(t, func() { bus.NewEvent[string]("test/note") })
	assert.Panics(t, func() { bus.NewHook[*note, int]("test/note") })
}

func TestEmitWithoutListenersSucceeds(t *testing.T) {
	root := newRoot(t)
	require.NoError(t, bus.NewEvent[int]("test/nobody").Emit(bg, root.Context(), 1))
}

func TestListenersRunInAppendAndPrependOrder(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	noteEvent.On(c, recordAs(tr, "append 1"))
	noteEvent.On(c, recordAs(tr, "prepend 1"), bus.Prepend)
	noteEvent.On(c, recordAs(tr, "append 2"))
	noteEvent.On(c, recordAs(tr, "prepend 2"), bus.Prepend)
	require.NoError(t, noteEvent.Emit(bg, c, &note{}))
	assert.Equal(t, []string{"prepend 2", "prepend 1", "append 1", "append 2"}, tr.get())
}

func TestOnceListenerRunsOnce(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	noteEvent.On(c, recordAs(tr, "once"), bus.Once)
	noteEvent.On(c, recordAs(tr, "always"))
	require.NoError(t, noteEvent.Emit(bg, c, &note{}))
	require.NoError(t, noteEvent.Emit(bg, c, &note{}))
	assert.Equal(t, []string{"once", "always", "always"}, tr.get())
	assert.Equal(t, 1, root.ListenerCount(noteEvent.Name()))
}

func TestOnceListenerRunsOnceUnderConcurrentEmits(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	noteEvent.On(c, recordAs(tr, "once"), bus.Once)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() { assert.NoError(t, noteEvent.Emit(bg, c, &note{})) })
	}
	wg.Wait()
	assert.Equal(t, []string{"once"}, tr.get())
}

func TestListenerDisposerRemovesListener(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	dispose := noteEvent.On(c, recordAs(tr, "gone"))
	noteEvent.On(c, recordAs(tr, "kept"))
	dispose()
	dispose()
	require.NoError(t, noteEvent.Emit(bg, c, &note{}))
	assert.Equal(t, []string{"kept"}, tr.get())
	assert.Equal(t, 1, root.ListenerCount(noteEvent.Name()))
}

func TestListenerIsRemovedWithItsFiber(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	f := apply(t, root.Context(), plugin("listens", func(c *bus.Context) error {
		noteEvent.On(c, recordAs(tr, "plugin"))
		return nil
	}), nil)
	require.NoError(t, noteEvent.Emit(bg, root.Context(), &note{}))
	require.NoError(t, f.Dispose())
	require.NoError(t, noteEvent.Emit(bg, root.Context(), &note{}))
	assert.Equal(t, []string{"plugin"}, tr.get())
	assert.Zero(t, root.ListenerCount(noteEvent.Name()))
}

func TestEmitStopsAtFirstError(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	noteEvent.On(root.Context(), recordAs(tr, "first"))
	apply(t, root.Context(), plugin("failing", func(c *bus.Context) error {
		noteEvent.On(c, func(context.Context, *note) error { tr.add("second"); return errBoom })
		return nil
	}), nil)
	noteEvent.On(root.Context(), recordAs(tr, "third"))
	err := noteEvent.Emit(bg, root.Context(), &note{})
	assert.ErrorIs(t, err, errBoom)
	var perr *bus.PluginError
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "failing", perr.Plugin)
	assert.Equal(t, "test/note", perr.Op)
	assert.Equal(t, []string{"first", "second"}, tr.get())
}

func TestObserveRunsEveryListenerAndJoinsErrors(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	errOther := errors.New("other")
	noteEvent.On(c, func(context.Context, *note) error { tr.add("1"); return errBoom })
	noteEvent.On(c, recordAs(tr, "2"))
	noteEvent.On(c, func(context.Context, *note) error { tr.add("3"); panic("observer") })
	noteEvent.On(c, func(context.Context, *note) error { tr.add("4"); return errOther })
	noteEvent.On(c, recordAs(tr, "5"))
	vetoed := false
	bus.Veto.On(c, func(context.Context, bus.Dispatch) error { vetoed = true; return errors.New("veto") })
	err := noteEvent.Observe(bg, c, &note{})
	assert.ErrorIs(t, err, errBoom)
	assert.ErrorIs(t, err, errOther)
	assert.ErrorIs(t, err, bus.ErrPanic)
	assert.Equal(t, []string{"1", "2", "3", "4", "5"}, tr.get())
	assert.False(t, vetoed, "Observe must not run the veto phase")
}

func TestParallelRunsListenersConcurrently(t *testing.T) {
	root := newRoot(t)
	const n = 4
	var started atomic.Int32
	all := make(chan struct{})
	for range n {
		noteEvent.On(root.Context(), func(ctx context.Context, _ *note) error {
			if started.Add(1) == n {
				close(all)
			}
			// Every listener waits for all the others to have started,
			// which only concurrent listeners can.
			select {
			case <-all:
				return nil
			case <-time.After(2 * time.Second):
				return errors.New("listeners did not run concurrently")
			}
		})
	}
	require.NoError(t, noteEvent.Parallel(bg, root.Context(), &note{}))
}

func TestParallelJoinsErrors(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	errOther := errors.New("other")
	var mu sync.Mutex
	ran := 0
	for _, e := range []error{errBoom, nil, errOther} {
		noteEvent.On(c, func(context.Context, *note) error {
			mu.Lock()
			ran++
			mu.Unlock()
			return e
		})
	}
	err := noteEvent.Parallel(bg, c, &note{})
	assert.ErrorIs(t, err, errBoom)
	assert.ErrorIs(t, err, errOther)
	assert.Equal(t, 3, ran)
}

func TestListenerAddedDuringDispatchRunsFromNextDispatch(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	added := false
	noteEvent.On(c, func(context.Context, *note) error {
		tr.add("adder")
		if !added {
			added = true
			noteEvent.On(c, recordAs(tr, "late"))
		}
		return nil
	})
	require.NoError(t, noteEvent.Emit(bg, c, &note{}))
	assert.Equal(t, []string{"adder"}, tr.get())
	require.NoError(t, noteEvent.Emit(bg, c, &note{}))
	assert.Equal(t, []string{"adder", "adder", "late"}, tr.get())
}

func TestListenerRemovedDuringDispatchIsSkipped(t *testing.T) {
	for _, filtered := range []bool{false, true} {
		t.Run(fmt.Sprintf("filtered=%v", filtered), func(t *testing.T) {
			root := newRoot(t)
			c := root.Context()
			if filtered {
				// A scoped listener takes the general dispatch path.
				c = c.Scope(func(any) bool { return true })
			}
			tr := &trace{}
			var disposeLater func()
			noteEvent.On(c, func(context.Context, *note) error {
				tr.add("remover")
				disposeLater()
				return nil
			})
			disposeLater = noteEvent.On(c, recordAs(tr, "removed"))
			require.NoError(t, noteEvent.Emit(bg, c, &note{Text: "s"}))
			assert.Equal(t, []string{"remover"}, tr.get())
		})
	}
}

func TestListenersRegisteredDuringConcurrentEmitsAreSafe(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	stop := make(chan struct{})
	emitted := make(chan struct{})
	go func() {
		defer close(emitted)
		for {
			select {
			case <-stop:
				return
			default:
				assert.NoError(t, noteEvent.Emit(bg, c, &note{"s"}))
			}
		}
	}()
	var calls atomic.Int32
	for range 200 {
		noteEvent.On(c, func(context.Context, *note) error { calls.Add(1); return nil }, bus.Once)
	}
	close(stop)
	<-emitted
	require.NoError(t, noteEvent.Emit(bg, c, &note{"s"}))
	assert.Equal(t, int32(200), calls.Load(), "every Once listener runs exactly once")
	assert.Zero(t, root.ListenerCount(noteEvent.Name()))
}
