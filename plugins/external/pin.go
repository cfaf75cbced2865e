package external

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// pinned is the private copy of a binary whose SHA-256 was checked, which
// the plugin process runs instead of the configured path: hashing a path
// and then executing it runs whatever the path names by then, and a file
// swapped in between would run unchecked. The copy is made from the very
// bytes that were hashed, where no one else can change them.
type pinned struct {
	// path is what to execute.
	path string
	// inherit, when set, is a descriptor the process inherits, which path
	// names as its descriptor number n would: fmt.Sprintf(path, n) (a
	// sealed memfd on Linux, see privateCopy).
	inherit *os.File
}

// pinBinary reads the binary at path once, hashing the bytes as it copies them
// into a private copy (in dir, a directory only this process uses, where
// no memfd can be had), and returns the copy if their SHA-256 is want.
func pinBinary(path, want, dir string) (*pinned, error) {
	src, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("external: %w", err)
	}
	defer src.Close()
	h := sha256.New()
	p, err := privateCopy(io.TeeReader(src, h), filepath.Join(dir, filepath.Base(path)))
	if err != nil {
		return nil, fmt.Errorf("external: copying %s to run what is checked: %w", path, err)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if want = strings.ToLower(want); got != want {
		p.close()
		return nil, fmt.Errorf("%w: %s has sha256 %s, the config wants %s", ErrChecksum, path, got, want)
	}
	return p, nil
}

// privateFile writes the executable copy of src to path, a file of a
// directory only this process uses.
func privateFile(src io.Reader, path string) (*pinned, error) {
	// No process is started while the copy is open for writing: a child
	// that inherited it (until its own exec) would make the exec of the
	// copy fail with ETXTBSY.
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	return privateFileLocked(src, path)
}

// privateFileLocked is privateFile for a caller holding syscall.ForkLock.
func privateFileLocked(src io.Reader, path string) (*pinned, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o700)
	if err != nil {
		return nil, err
	}
	if _, err := io.Copy(f, src); err != nil {
		_ = f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	return &pinned{path: path}, nil
}

// close releases what the parent holds of the copy once the process has
// started (or will not): the child has its own descriptor, and a private
// file goes with its directory.
func (p *pinned) close() {
	if p != nil && p.inherit != nil {
		_ = p.inherit.Close()
	}
}
