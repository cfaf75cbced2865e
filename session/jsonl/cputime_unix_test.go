//go:build unix

package jsonl_test

import (
	"syscall"
	"time"
)

// cpuNow returns the CPU time the process has used (user and system, all
// threads, the garbage collector's included). On a shared machine a
// benchmark's wall time is mostly other processes'; its CPU time is its
// own.
func cpuNow() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
