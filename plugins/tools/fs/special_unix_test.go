//go:build unix

package fstools_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	fstools "github.com/vigil-run/vigil/plugins/tools/fs"
)

// TestToolsRefuseSpecialFiles: a named pipe, a socket or a device inside
// the root is refused without being opened in a way that blocks; before,
// read_file on a FIFO waited in open(2) for a writer forever.
func TestToolsRefuseSpecialFiles(t *testing.T) {
	root, _ := workspace(t)
	fifo := filepath.Join(root, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	require.NoError(t, os.Symlink("fifo", filepath.Join(root, "fifo-link")))
	// A short socket path: sun_path is limited to about 100 bytes.
	sockDir, err := os.MkdirTemp("", "fs")
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(sockDir) })
	l, err := net.Listen("unix", filepath.Join(sockDir, "s"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	require.NoError(t, os.Rename(filepath.Join(sockDir, "s"), filepath.Join(root, "sock")))
	names := []string{"fifo", "fifo-link", "sock"}
	switch err := mknodNull(filepath.Join(root, "null")); {
	case err == nil:
		names = append(names, "null")
	case errors.Is(err, syscall.EPERM), errors.Is(err, errors.ErrUnsupported):
		t.Log("no device case:", err)
	default:
		require.NoError(t, err)
	}
	ts := tools(t, root, 0)
	for _, name := range names {
		for _, tool := range []string{"read_file", "list_dir"} {
			t.Run(tool+" "+name, func(t *testing.T) {
				args, _ := json.Marshal(map[string]string{"path": name})
				type result struct {
					got string
					err error
				}
				done := make(chan result, 1)
				go func() {
					got, err := ts[tool].Execute(context.Background(), args)
					done <- result{got, err}
				}()
				var r result
				select {
				case r = <-done:
				case <-time.After(10 * time.Second):
					// Unblock the open so the goroutine ends, then fail.
					if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
						_ = w.Close()
					}
					<-done
					t.Fatalf("%s(%q) blocked", tool, name)
				}
				assert.Empty(t, r.got)
				var te *agentloop.ToolError
				require.ErrorAs(t, r.err, &te)
				assert.Equal(t, fstools.CodeNotRegular, te.Code, te.Message)
			})
		}
	}
}

// mknodNull makes a character device like /dev/null at p, on Linux.
func mknodNull(p string) error {
	if runtime.GOOS != "linux" {
		return errors.ErrUnsupported
	}
	return syscall.Mknod(p, syscall.S_IFCHR|0o600, 1<<8|3)
}
