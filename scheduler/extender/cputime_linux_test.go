//go:build linux

package extender

import (
	"time"

	"golang.org/x/sys/unix"
)

// processCPUTime is the CPU time the process has used, garbage collection
// included. Benchmarks report it beside wall time, which on a shared
// machine also counts the time spent waiting for a CPU.
func processCPUTime() (time.Duration, bool) {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
