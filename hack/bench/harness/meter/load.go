package meter

import (
	"os"
	"runtime"
	"strings"
)

// LoadAverage is the machine's 1, 5 and 15 minute load averages, as
// /proc/loadavg gives them, or "unknown".
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	fields := strings.Fields(string(data))
	if len(fields) < 3 {
		return "unknown"
	}
	return strings.Join(fields[:3], " ")
}

// NumCPU is how many CPUs the process may run on.
func NumCPU() int { return runtime.NumCPU() }
