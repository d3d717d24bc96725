//go:build linux

package classifier

import (
	"syscall"
	"time"
)

// threadCPU returns the calling thread's CPU time. Benchmarks lock their
// goroutine to its thread and report CPU time per op next to wall time,
// because on a shared machine wall time measures the neighbours.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(1 /* RUSAGE_THREAD */, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
