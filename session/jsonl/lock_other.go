//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package jsonl

import (
	"os"

	"github.com/gofrs/flock"
)

// lockFile takes the exclusive lock of f's file without waiting. Where
// gofrs/flock does not use flock(2), the lock is its own, on a
// descriptor of its own, so that every store takes the same lock.
func lockFile(f *os.File) (unlock func() error, ok bool, err error) {
	l := flock.New(f.Name())
	if ok, err = l.TryLock(); err != nil || !ok {
		_ = l.Close()
		return nil, false, err
	}
	return l.Close, true, nil
}
