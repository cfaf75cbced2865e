//go:build !unix

package agentloop_test

import "time"

var start = time.Now()

// cpuNow is the wall time where the process's CPU time is not at hand.
func cpuNow() time.Duration { return time.Since(start) }
