//go:build unix

package fstools

import (
	"os"
	"syscall"
)

// openNonblock makes opening a named pipe return at once.
const openNonblock = syscall.O_NONBLOCK

// setBlocking clears O_NONBLOCK on fh's descriptor.
func setBlocking(fh *os.File) error {
	rc, err := fh.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}
