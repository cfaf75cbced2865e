package bus_test

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestPluginLogsThroughSubLoggerNamedAfterIt(t *testing.T) {
	out := &syncBuffer{}
	logger := hclog.New(&hclog.LoggerOptions{Name: "vigil", Output: out, Level: hclog.Info})
	root := newRoot(t, bus.WithLogger(logger))
	assert.Same(t, logger, root.Context().Logger())
	apply(t, root.Context(), plugin("tools/fs", func(c *bus.Context) error {
		c.Logger().Info("hello")
		return nil
	}), nil)
	assert.Contains(t, out.String(), "vigil.tools/fs: hello")
}

func TestFailuresAreLoggedByTheFailingPlugin(t *testing.T) {
	out := &syncBuffer{}
	root := newRoot(t, bus.WithLogger(hclog.New(&hclog.LoggerOptions{Output: out, Level: hclog.Error})))
	_, err := root.Context().Plugin(plugin("broken", func(*bus.Context) error { return errBoom }), nil)
	require.ErrorIs(t, err, errBoom)
	apply(t, root.Context(), plugin("observer", func(c *bus.Context) error {
		noteEvent.On(c, func(context.Context, *note) error { return errBoom })
		return nil
	}), nil)
	require.Error(t, noteEvent.Observe(bg, root.Context(), &note{}))
	assert.Contains(t, out.String(), "broken: apply failed")
	assert.Contains(t, out.String(), "observer: observer failed")
}

func TestPluginAsLogsUnderTheGivenNameAndErrorsNameThePlugin(t *testing.T) {
	out := &syncBuffer{}
	root := newRoot(t, bus.WithLogger(hclog.New(&hclog.LoggerOptions{Name: "vigil", Output: out, Level: hclog.Info})))
	_, err := root.Context().PluginAs("files", plugin("tools/mcp", func(c *bus.Context) error {
		c.Logger().Info("hello")
		return errBoom
	}), nil)
	var perr *bus.PluginError
	require.ErrorAs(t, err, &perr)
	assert.Equal(t, "tools/mcp", perr.Plugin)
	assert.Contains(t, out.String(), "vigil.files: hello")
	assert.NotContains(t, out.String(), "vigil.tools/mcp")
}
