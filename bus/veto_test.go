package bus_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

var errVeto = errors.New("vetoed")

func TestVetoSeesDispatchBeforeListeners(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	noteEvent.On(c, recordAs(tr, "listener"))
	sent := &note{"x"}
	bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
		tr.add("veto " + d.Name)
		assert.Same(t, sent, d.Payload)
		return nil
	})
	require.NoError(t, noteEvent.Emit(bg, c, sent))
	assert.Equal(t, []string{"veto test/note", "listener"}, tr.get())
}

func TestVetoStopsEveryDispatchMode(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	bus.Veto.On(c, func(_ context.Context, d bus.Dispatch) error {
		if n, ok := d.Payload.(*note); ok && n.Text == "forbidden" {
			return errVeto
		}
		if d.Payload == "forbidden" {
			return errVeto
		}
		return nil
	})
	noteEvent.On(c, recordAs(tr, "listener"))
	askHook.On(c, answer(tr, "hook", 1, nil))
	wrapFall.On(c, layer(tr, "waterfall"))
	bad := &note{"forbidden"}
	modes := map[string]func() error{
		"emit":     func() error { return noteEvent.Emit(bg, c, bad) },
		"check":    func() error { return noteEvent.Check(bg, c, bad) },
		"parallel": func() error { return noteEvent.Parallel(bg, c, bad) },
		"serial":   func() error { _, err := askHook.Serial(bg, c, "forbidden"); return err },
		"bail":     func() error { _, err := askHook.Bail(bg, c, "forbidden"); return err },
		"waterfall": func() error {
			_, err := wrapFall.Run(bg, c, "forbidden", echo(tr))
			return err
		},
	}
	for name, run := range modes {
		t.Run(name, func(t *testing.T) {
			err := run()
			assert.ErrorIs(t, err, errVeto)
			var perr *bus.PluginError
			require.ErrorAs(t, err, &perr)
			assert.Equal(t, "internal/dispatch", perr.Op)
		})
	}
	assert.Empty(t, tr.get())
	require.NoError(t, noteEvent.Emit(bg, c, &note{"fine"}))
	assert.Equal(t, []string{"listener"}, tr.get())
}

func TestCheckRunsOnlyTheVetoPhase(t *testing.T) {
	root := newRoot(t)
	c := root.Context()
	tr := &trace{}
	noteEvent.On(c, recordAs(tr, "listener"))
	bus.Veto.On(c, func(context.Context, bus.Dispatch) error { tr.add("veto"); return nil })
	require.NoError(t, noteEvent.Check(bg, c, &note{}))
	assert.Equal(t, []string{"veto"}, tr.get())
}

func TestScopedVetoJudgesOnlyItsSubject(t *testing.T) {
	root := newRoot(t)
	scoped := root.Context().Scope(only("a"))
	bus.Veto.On(scoped, func(context.Context, bus.Dispatch) error { return errVeto })
	assert.ErrorIs(t, noteEvent.Emit(bg, root.Context(), &note{"a"}), errVeto)
	assert.NoError(t, noteEvent.Emit(bg, root.Context(), &note{"b"}))
}
