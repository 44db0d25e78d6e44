package cputime

import (
	"runtime"
	"testing"
)

// TestReadCountsWork checks that both scopes see CPU time go by while the
// calling thread spins. The goroutine stays on its thread, as Report keeps
// it: moved to another, it would read that thread's time.
func TestReadCountsWork(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for _, scope := range []Scope{Thread, Process} {
		start, ok := read(scope)
		if !ok {
			t.Skip("CPU time is not read on this system")
		}
		var end = start
		for spins := 0; end == start && spins < 1e9; spins++ {
			end, _ = read(scope)
		}
		if end <= start {
			t.Errorf("scope %d: CPU time went from %s to %s while spinning", scope, start, end)
		}
	}
}
