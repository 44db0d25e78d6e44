// Package meter measures what the bench runs: CPU time by process, API
// writes and requests, scheduler and extender metrics, percentiles and
// the load average.
package meter

import (
	"bytes"
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// clockTicks is the kernel's USER_HZ, the unit of /proc/<pid>/stat times;
// it is 100 on every Linux architecture Go supports.
const clockTicks = 100

// CPUUsage is CPU time by component.
type CPUUsage map[string]time.Duration

// SampleCPU returns the CPU time (user + system) used so far by each
// process whose command line mentions dir, which holds every file of one
// control plane and of the extender, by program name, and by this process
// as "bench".
func SampleCPU(dir string) CPUUsage {
	usage := CPUUsage{}
	if t, err := ProcessCPU(os.Getpid()); err == nil {
		usage["bench"] = t
	}
	for _, p := range ProcessesOf(dir) {
		if t, err := ProcessCPU(p.Pid); err == nil {
			usage[p.Name] += t
		}
	}
	return usage
}

// process is a running process: its id and program name.
type process struct {
	Pid  int
	Name string
}

// ProcessesOf lists the processes, other than this one, whose command line
// mentions dir, which holds every file of one control plane and of the
// extender.
func ProcessesOf(dir string) []process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(dir)) {
			continue
		}
		out = append(out, process{Pid: pid, Name: filepath.Base(string(bytes.SplitN(cmdline, []byte{0}, 2)[0]))})
	}
	return out
}

// ProcessCPU reads a process's user and system time from /proc/<pid>/stat.
func ProcessCPU(pid int) (time.Duration, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: fields count from its end.
	end := bytes.LastIndexByte(data, ')')
	if end < 0 {
		return 0, fmt.Errorf("parsing /proc/%d/stat", pid)
	}
	fields := strings.Fields(string(data[end+1:]))
	// After the name: state is field 3 of stat(5), utime 14, stime 15.
	if len(fields) < 13 {
		return 0, fmt.Errorf("parsing /proc/%d/stat: %d fields", pid, len(fields))
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parsing /proc/%d/stat times", pid)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// Since is the CPU time used from before to u, by component; components
// that were not running before count from zero.
func (u CPUUsage) Since(before CPUUsage) CPUUsage {
	out := CPUUsage{}
	for name, t := range u {
		out[name] = t - before[name]
	}
	return out
}

// Total is the CPU time of every component.
func (u CPUUsage) Total() time.Duration {
	var total time.Duration
	for _, t := range u {
		total += t
	}
	return total
}

// String lists the components, the busiest first, with the total.
func (u CPUUsage) String() string {
	names := keysByValue(u)
	parts := make([]string, 0, len(names)+1)
	for _, name := range names {
		parts = append(parts, fmt.Sprintf("%s %.1f s", name, u[name].Seconds()))
	}
	parts = append(parts, fmt.Sprintf("total %.1f s", u.Total().Seconds()))
	return strings.Join(parts, ", ")
}

// keysByValue returns the map's keys, the one with the largest value
// first, keys with equal values in their order.
func keysByValue[V cmp.Ordered](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	return keys
}
