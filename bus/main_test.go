package bus_test

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/vigil-run/vigil/bus"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newRoot returns a root disposed when the test ends.
func newRoot(t *testing.T, opts ...bus.Option) *bus.Root {
	t.Helper()
	r := bus.New(opts...)
	t.Cleanup(func() { _ = r.Dispose() })
	return r
}

// apply applies p under c and requires it to load.
func apply(t *testing.T, c *bus.Context, p bus.Plugin, cfg any) *bus.Fiber {
	t.Helper()
	f, err := c.Plugin(p, cfg)
	require.NoError(t, err)
	return f
}

// plugin is a plugin without config or dependencies.
func plugin(name string, run func(c *bus.Context) error) *bus.Func[struct{}] {
	return bus.PluginFunc(name, func(c *bus.Context, _ struct{}) error { return run(c) })
}

// trace records what happened, in order, from any goroutine.
type trace struct {
	mu  sync.Mutex
	log []string
}

func (tr *trace) add(s string) {
	tr.mu.Lock()
	tr.log = append(tr.log, s)
	tr.mu.Unlock()
}

func (tr *trace) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return append([]string(nil), tr.log...)
}

// effect registers an effect whose disposer records name in tr.
func effect(t *testing.T, c *bus.Context, tr *trace, name string) {
	t.Helper()
	require.NoError(t, c.Effect(func() func() { return func() { tr.add(name) } }))
}
