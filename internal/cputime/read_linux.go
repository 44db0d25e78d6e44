//go:build linux

package cputime

import (
	"time"

	"golang.org/x/sys/unix"
)

// read returns the CPU time the scope has used so far.
func read(scope Scope) (time.Duration, bool) {
	who := unix.RUSAGE_SELF
	if scope == Thread {
		who = unix.RUSAGE_THREAD
	}
	var ru unix.Rusage
	if err := unix.Getrusage(who, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
