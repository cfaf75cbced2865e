//go:build !unix

package server_test

// openFiles is the number of connections a test may open at once.
func openFiles() int { return 4096 }
