// Package cputime reads the CPU time the process has used, for the
// benchmarks that report it: on a shared machine a benchmark's wall time
// is mostly other processes', its CPU time is its own.
package cputime
