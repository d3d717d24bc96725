//go:build unix

package classifier

import (
	"syscall"
	"testing"
	"time"
)

// llmCPUTime is the process's user+system CPU time. Benchmarks report it
// per operation next to ns/op, because on a shared machine wall time per
// op includes time spent waiting for a core.
func llmCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// llmReportCPU reports CPU ns per op since start.
func llmReportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64((llmCPUTime()-start).Nanoseconds())/float64(b.N), "cpu-ns/op")
}
