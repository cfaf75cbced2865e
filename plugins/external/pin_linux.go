package external

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// privateCopy copies src into a sealed memfd: no process can change its
// bytes, not even one of the same user, and nothing is written to disk.
// The plugin process inherits a read-only descriptor of it and executes it
// as /proc/self/fd/N. Where memfds or /proc are not to be had, the copy is
// a private file at path.
func privateCopy(src io.Reader, path string) (*pinned, error) {
	// No process is started while the memfd is open for writing (see
	// privateFile).
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	fd, err := unix.MemfdCreate("vigil-plugin", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return privateFileLocked(src, path)
	}
	w := os.NewFile(uintptr(fd), "memfd")
	defer w.Close()
	// The descriptor the process inherits is opened read-only, before
	// anything is read from src: exec refuses a file that is open for
	// writing (ETXTBSY), so the writable one is closed before the start.
	r, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", fd))
	if err != nil {
		return privateFileLocked(src, path)
	}
	if _, err := io.Copy(w, src); err != nil {
		_ = r.Close()
		return nil, err
	}
	const seals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if _, err := unix.FcntlInt(w.Fd(), unix.F_ADD_SEALS, seals); err != nil {
		_ = r.Close()
		return nil, fmt.Errorf("sealing the copy: %w", err)
	}
	return &pinned{path: "/proc/self/fd/%d", inherit: r}, nil
}
