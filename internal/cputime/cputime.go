// Package cputime reports the CPU time benchmarks use. On a shared machine
// wall time also counts the time spent waiting for a CPU; CPU time does not.
package cputime

import (
	"runtime"
	"testing"
)

// Scope is whose CPU time is counted.
type Scope int

const (
	// Thread is the benchmark's own OS thread: the work, without the
	// garbage collector's share.
	Thread Scope = iota
	// Process is the whole process, garbage collection included.
	Process
)

// Report starts counting and returns a function that, run at the
// benchmark's end, reports the CPU time per op as cpu-ns/op. With Thread the
// goroutine stays locked to its thread until then. Where CPU time cannot be
// read, nothing is reported.
func Report(b *testing.B, scope Scope) func() {
	if scope == Thread {
		runtime.LockOSThread()
	}
	start, ok := read(scope)
	return func() {
		end, _ := read(scope)
		if scope == Thread {
			runtime.UnlockOSThread()
		}
		if ok && b.N > 0 {
			b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
		}
	}
}
