//go:build !unix

package cputime

import "time"

var start = time.Now()

// Now is the wall time where the process's CPU time is not at hand.
func Now() time.Duration { return time.Since(start) }
