package bus_test

import (
	"context"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/bus"
)

// captureFDs runs fn with file descriptors 1 and 2 redirected to a pipe and
// returns what was written to them. Redirecting the descriptors, not
// os.Stdout, also catches writers that captured os.Stderr at init time
// (such as hclog's default logger).
func captureFDs(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	require.NoError(t, err)
	defer r.Close()
	out := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(r)
		out <- b
	}()
	var saved [2]int
	for i, fd := range []int{1, 2} {
		saved[i], err = syscall.Dup(fd)
		require.NoError(t, err)
		require.NoError(t, syscall.Dup3(int(w.Fd()), fd, 0))
	}
	func() {
		defer func() {
			for i, fd := range []int{1, 2} {
				_ = syscall.Dup3(saved[i], fd, 0)
				_ = syscall.Close(saved[i])
			}
		}()
		fn()
	}()
	require.NoError(t, w.Close())
	return string(<-out)
}

func TestBusNeverWritesToStdoutOrStderr(t *testing.T) {
	got := captureFDs(t, func() {
		// The default logger discards; exercise every path that logs.
		root := bus.New()
		svc := bus.NewService[int]("test/quiet")
		_, _ = root.Context().Plugin(&bus.Func[struct{}]{ID: "waits", Deps: bus.Inject{Required: []bus.ServiceKey{svc}}}, nil)
		_, _ = root.Context().Plugin(plugin("fails", func(*bus.Context) error { panic("apply") }), nil)
		_, _ = root.Context().Plugin(plugin("noisy", func(c *bus.Context) error {
			c.Logger().Error("error through the plugin logger")
			noteEvent.On(c, func(context.Context, *note) error { panic("listener") })
			_, err := svc.Provide(c, 1)
			return errors.Join(err, c.Effect(func() func() { return func() { panic("disposer") } }))
		}), nil)
		_ = noteEvent.Observe(bg, root.Context(), &note{})
		_ = noteEvent.Emit(bg, root.Context(), &note{})
		_ = root.Dispose()
		noteEvent.On(root.Context(), func(context.Context, *note) error { return nil })
	})
	assert.Empty(t, got)
}

func TestCaptureFDsSeesWritesToStdoutAndStderr(t *testing.T) {
	got := captureFDs(t, func() {
		_, _ = os.Stdout.WriteString("out ")
		_, _ = os.Stderr.WriteString("err")
	})
	assert.Equal(t, "out err", got)
}
