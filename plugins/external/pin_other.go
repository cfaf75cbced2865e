//go:build !linux

package external

import "io"

// privateCopy writes the copy to path, a file of a directory only this
// process uses (created 0700 by os.MkdirTemp).
func privateCopy(src io.Reader, path string) (*pinned, error) {
	return privateFile(src, path)
}
