//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package jsonl

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes the exclusive lock of f's file without waiting: on the
// file's own descriptor, so the writer holds one descriptor, and closing
// it drops the lock. It interoperates with gofrs/flock, which takes the
// same flock(2) lock elsewhere (the queue, other versions of the store).
func lockFile(f *os.File) (unlock func() error, ok bool, err error) {
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	switch {
	case err == nil:
		return func() error { return nil }, true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return nil, false, nil
	}
	return nil, false, err
}
