//go:build unix

package external_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/vigil-run/vigil/agentloop"
	"github.com/vigil-run/vigil/bus"
	"github.com/vigil-run/vigil/plugins/external"
)

// copyFile copies the file at src to dst, executable.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o755)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

// A pinned entry runs the bytes whose checksum it checked, however its file
// changes meanwhile: while another process keeps swapping the path between
// the pinned binary and another plugin, every start runs the pinned one or
// is refused with ErrChecksum.
func TestAPinnedEntryRunsTheBytesItChecked(t *testing.T) {
	const starts = 30
	dir := t.TempDir()
	pinnedBin, otherBin := filepath.Join(dir, "pinned"), filepath.Join(dir, "other")
	copyFile(t, bins["testplugin"], pinnedBin)
	copyFile(t, bins["units"], otherBin)
	path := filepath.Join(dir, "plugin")
	// swap makes path name src, in one rename.
	swap := func(src string) error {
		tmp := path + ".next"
		if err := os.Link(src, tmp); err != nil {
			return err
		}
		return os.Rename(tmp, path)
	}
	require.NoError(t, swap(pinnedBin))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	swaps := 0
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Microsecond):
			}
			src := pinnedBin
			if swaps%2 == 0 {
				src = otherBin
			}
			if !assert.NoError(t, swap(src)) {
				return
			}
			swaps++
		}
	})

	h := newHost(t)
	cfg := &external.Config{Path: path, SHA256: sha256File(t, pinnedBin)}
	var ranPinned, ranOther, refused int
	for range starts {
		f, err := h.load(cfg)
		switch {
		case errors.Is(err, external.ErrChecksum):
			refused++
		case assert.NoError(t, err):
			// Only the test plugin has a pid tool; units has its own.
			if _, err := bus.NewService[agentloop.Tool](agentloop.ToolServicePrefix + "pid").Get(h.c); err == nil {
				ranPinned++
			} else {
				ranOther++
			}
		}
		if f != nil {
			require.NoError(t, f.Dispose())
		}
	}
	close(stop)
	wg.Wait()
	t.Logf("%d starts while the file was swapped %d times: %d ran the pinned binary, %d were refused (checksum), %d ran another binary", starts, swaps, ranPinned, refused, ranOther)
	assert.Zero(t, ranOther, "a start ran a binary other than the pinned one")
	assert.NotZero(t, ranPinned)
	assert.NotZero(t, refused, "the swaps raced no start")
}
