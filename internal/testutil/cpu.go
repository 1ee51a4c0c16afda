package testutil

import (
	"testing"
	"time"
)

// CPUTime returns the CPU time (user and system, all threads) this process
// has used so far; 0 where it cannot be read.
func CPUTime() time.Duration { return cpuTime() }

// ReportCPU starts counting the process's CPU time; the function it returns
// reports the CPU time per iteration as "cpu-ns/op". Call it around the
// benchmark's loop. Unlike ns/op, the figure does not grow while the
// process waits for a core on a loaded machine, and it counts the work of
// every goroutine (a pool refilled in the background included), not only
// the benchmark's.
func ReportCPU(b *testing.B) (stop func()) {
	start := CPUTime()
	return func() {
		if b.N > 0 && start > 0 {
			b.ReportMetric(float64(CPUTime()-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
