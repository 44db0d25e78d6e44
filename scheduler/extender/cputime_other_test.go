//go:build !linux

package extender

import "time"

// processCPUTime is not measured outside Linux.
func processCPUTime() (time.Duration, bool) { return 0, false }
