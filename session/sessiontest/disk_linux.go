//go:build linux

package sessiontest

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// SmallDisk mounts a tmpfs of size ("4m") for t and returns its
// directory, unmounted when t ends: a disk a test can fill. t is skipped
// unless it runs as root (or the mount is refused).
func SmallDisk(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size="+size); err != nil {
		t.Skipf("mount a tmpfs: %v", err)
	}
	t.Cleanup(func() { _ = syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// FillDisk writes a file in dir until its filesystem is full, to the
// last byte, and returns the file: removing it brings the space back.
func FillDisk(t testing.TB, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	require.NoError(t, err)
	defer f.Close()
	chunk := make([]byte, 64<<10)
	for _, n := range []int{len(chunk), 4096, 512, 64, 1} {
		for {
			if _, err := f.Write(chunk[:n]); err != nil {
				require.True(t, errors.Is(err, syscall.ENOSPC), "%v", err)
				break
			}
		}
	}
	return path
}
