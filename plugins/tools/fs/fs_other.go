//go:build !unix

package fstools

import "os"

// openNonblock is zero where opening a file never waits for a peer.
const openNonblock = 0

func setBlocking(*os.File) error { return nil }
