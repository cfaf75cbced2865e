package bus_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

type greeting struct {
	Text  string
	Block bool
}

func TestFuncReceivesTypedConfig(t *testing.T) {
	cases := []struct {
		name string
		cfg  any
		want greeting
	}{
		{"value", greeting{Text: "hi"}, greeting{Text: "hi"}},
		{"pointer", &greeting{Text: "hi"}, greeting{Text: "hi"}},
		{"nil", nil, greeting{}},
		{"nil pointer", (*greeting)(nil), greeting{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			var got greeting
			p := bus.PluginFunc("typed", func(_ *bus.Context, g greeting) error { got = g; return nil })
			apply(t, root.Context(), p, tc.cfg)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestFuncRejectsConfigOfAnotherType(t *testing.T) {
	root := newRoot(t)
	called := false
	p := bus.PluginFunc("typed", func(*bus.Context, greeting) error { called = true; return nil })
	f, err := root.Context().Plugin(p, "not a greeting")
	assert.ErrorIs(t, err, bus.ErrConfigType)
	assert.False(t, called)
	assert.Equal(t, bus.StateFailed, f.State())
}

func TestConfigAs(t *testing.T) {
	g, err := bus.ConfigAs[greeting](&greeting{Text: "x"})
	require.NoError(t, err)
	assert.Equal(t, "x", g.Text)
	_, err = bus.ConfigAs[greeting](42)
	assert.ErrorIs(t, err, bus.ErrConfigType)
	n, err := bus.ConfigAs[int](nil)
	require.NoError(t, err)
	assert.Zero(t, n)
}

// configPlugin records each config it is applied or reconfigured with. An
// apply whose config has Block set waits for release to be closed.
type configPlugin struct {
	release chan struct{}
	loading chan *bus.Fiber

	mu      sync.Mutex
	applied []string
	reconf  []string
}

func (p *configPlugin) Name() string { return "config" }

func (p *configPlugin) Apply(c *bus.Context, cfg any) error {
	g, err := bus.ConfigAs[greeting](cfg)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.applied = append(p.applied, g.Text)
	p.mu.Unlock()
	if g.Block {
		p.loading <- c.Fiber()
		<-p.release
	}
	return nil
}

func (p *configPlugin) got() (applied, reconfigured []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.applied...), append([]string(nil), p.reconf...)
}

// reconfigPlugin is a configPlugin that takes updates in place.
type reconfigPlugin struct{ configPlugin }

func (p *reconfigPlugin) Reconfigure(_ *bus.Context, cfg any) error {
	g, err := bus.ConfigAs[greeting](cfg)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.reconf = append(p.reconf, g.Text)
	p.mu.Unlock()
	return nil
}

var _ bus.Reconfigurer = (*reconfigPlugin)(nil)

func TestUpdateReloadsPluginWithoutReconfigurer(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	var applied []string
	p := bus.PluginFunc("reload", func(c *bus.Context, g greeting) error {
		applied = append(applied, g.Text)
		effect(t, c, tr, "dispose "+g.Text)
		return nil
	})
	f := apply(t, root.Context(), p, greeting{Text: "one"})
	require.NoError(t, f.Update(greeting{Text: "two"}))
	assert.Equal(t, []string{"one", "two"}, applied)
	assert.Equal(t, []string{"dispose one"}, tr.get())
	assert.Equal(t, uint64(2), f.Generation())
	assert.Equal(t, greeting{Text: "two"}, f.Config())
	assert.Equal(t, bus.StateActive, f.State())
}

func TestUpdateReconfiguresPluginInPlace(t *testing.T) {
	root := newRoot(t)
	p := &reconfigPlugin{}
	f := apply(t, root.Context(), p, greeting{Text: "one"})
	require.NoError(t, f.Update(greeting{Text: "two"}))
	applied, reconf := p.got()
	assert.Equal(t, []string{"one"}, applied)
	assert.Equal(t, []string{"two"}, reconf)
	assert.Equal(t, uint64(2), f.Generation())
}

func TestReconfigureErrorIsAPluginError(t *testing.T) {
	root := newRoot(t)
	p := &reconfigPlugin{}
	f := apply(t, root.Context(), p, greeting{})
	err := f.Update(42)
	assert.ErrorIs(t, err, bus.ErrConfigType)
	var perr *bus.PluginError
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "update", perr.Op)
	assert.Equal(t, bus.StateActive, f.State())
}

// An update that arrives while the plugin is still loading must be applied
// after the load (Cordis issue #34 lost it).
func TestUpdateDuringLoadIsAppliedAfterLoad(t *testing.T) {
	cases := []struct {
		name         string
		reconfigure  bool
		applied      []string
		reconfigured []string
	}{
		{"reload", false, []string{"one", "two"}, nil},
		{"reconfigure", true, []string{"one"}, []string{"two"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root := newRoot(t)
			loading := make(chan *bus.Fiber)
			release := make(chan struct{})
			rp := &reconfigPlugin{configPlugin{loading: loading, release: release}}
			var p bus.Plugin = &rp.configPlugin
			if tc.reconfigure {
				p = rp
			}
			done := make(chan error)
			go func() {
				_, err := root.Context().Plugin(p, greeting{Text: "one", Block: true})
				done <- err
			}()
			f := <-loading
			require.NoError(t, f.Update(greeting{Text: "two"}))
			assert.Equal(t, bus.StateLoading, f.State())
			close(release)
			require.NoError(t, <-done)

			applied, reconf := rp.got()
			assert.Equal(t, tc.applied, applied)
			assert.Equal(t, tc.reconfigured, reconf)
			assert.Equal(t, uint64(2), f.Generation())
			assert.Equal(t, bus.StateActive, f.State())
		})
	}
}

func TestUpdateDuringReloadIsNotLost(t *testing.T) {
	root := newRoot(t)
	unloading := make(chan *bus.Fiber)
	release := make(chan struct{})
	var mu sync.Mutex
	var applied []string
	p := bus.PluginFunc("slow-unload", func(c *bus.Context, g greeting) error {
		mu.Lock()
		applied = append(applied, g.Text)
		mu.Unlock()
		if !g.Block {
			return nil
		}
		return c.Effect(func() func() {
			return func() {
				unloading <- c.Fiber()
				<-release
			}
		})
	})
	f := apply(t, root.Context(), p, greeting{Text: "one", Block: true})
	done := make(chan error)
	go func() { done <- f.Update(greeting{Text: "two"}) }()
	<-unloading
	require.Equal(t, bus.StateUnloading, f.State())
	require.NoError(t, f.Update(greeting{Text: "three"}))
	close(release)
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"one", "three"}, applied)
	assert.Equal(t, uint64(3), f.Generation())
}

func TestUpdateRetriesFailedPlugin(t *testing.T) {
	root := newRoot(t)
	p := bus.PluginFunc("retry", func(_ *bus.Context, g greeting) error {
		if g.Text == "" {
			return errBoom
		}
		return nil
	})
	f, err := root.Context().Plugin(p, nil)
	require.ErrorIs(t, err, errBoom)
	require.Equal(t, bus.StateFailed, f.State())
	require.NoError(t, f.Update(greeting{Text: "fixed"}))
	assert.Equal(t, bus.StateActive, f.State())
	assert.NoError(t, f.Err())
}

func TestUpdateOfPendingPluginIsUsedWhenItLoads(t *testing.T) {
	root := newRoot(t)
	svc := bus.NewService[int]("test/pending-update")
	var got string
	p := &bus.Func[greeting]{
		ID:   "pending",
		Deps: bus.Inject{Required: []bus.ServiceKey{svc}},
		Run:  func(_ *bus.Context, g greeting) error { got = g.Text; return nil },
	}
	f := apply(t, root.Context(), p, greeting{Text: "old"})
	require.NoError(t, f.Update(greeting{Text: "new"}))
	assert.Empty(t, got)
	_, err := svc.Provide(root.Context(), 1)
	require.NoError(t, err)
	assert.Equal(t, "new", got)
}

func TestUpdateOfDisposedFiberFails(t *testing.T) {
	root := newRoot(t)
	f := apply(t, root.Context(), plugin("gone", func(*bus.Context) error { return nil }), nil)
	require.NoError(t, f.Dispose())
	assert.ErrorIs(t, f.Update(nil), bus.ErrDisposed)
}

func TestUpdateOfRootFiberFails(t *testing.T) {
	root := newRoot(t)
	tr := &trace{}
	effect(t, root.Context(), tr, "root effect")
	assert.ErrorIs(t, root.Context().Fiber().Update(nil), bus.ErrNilPlugin)
	assert.Empty(t, tr.get())
}

func TestFiberDisposedDuringReloadStaysDisposed(t *testing.T) {
	root := newRoot(t)
	unloading := make(chan struct{})
	release := make(chan struct{})
	var mu sync.Mutex
	applies := 0
	p := bus.PluginFunc("slow-unload", func(c *bus.Context, g greeting) error {
		mu.Lock()
		applies++
		mu.Unlock()
		return c.Effect(func() func() {
			return func() {
				if g.Block {
					unloading <- struct{}{}
					<-release
				}
			}
		})
	})
	f := apply(t, root.Context(), p, greeting{Block: true})
	done := make(chan error)
	go func() { done <- f.Update(greeting{}) }()
	<-unloading
	require.NoError(t, f.Dispose())
	close(release)
	require.NoError(t, <-done)
	assert.Equal(t, bus.StateDisposed, f.State())
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, 1, applies)
}
