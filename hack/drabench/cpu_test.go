package drabench

import (
	"syscall"
	"testing"
	"time"
)

// cpuClock adds up the CPU time the process spends, its garbage
// collector's included, between start and stop. On a machine that other
// work shares, the time a benchmark waits for a CPU inflates ns/op; CPU
// time counts only the work.
type cpuClock struct {
	total, began time.Duration
}

func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

func (c *cpuClock) start(b *testing.B) { c.began = processCPU(b) }
func (c *cpuClock) stop(b *testing.B)  { c.total += processCPU(b) - c.began }

// report adds the CPU time per op to the benchmark's results.
func (c *cpuClock) report(b *testing.B) {
	b.ReportMetric(float64(c.total.Nanoseconds())/float64(b.N), "cpu-ns/op")
}
