package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// ControlPlaneProcesses are the programs --pin-control-plane puts on the
// control plane's CPU; every other process of a row (kube-scheduler,
// tessera-scheduler, the extender, the bench) runs on the rest.
func ControlPlaneProcesses() []string {
	return []string{"etcd", "kube-apiserver", "kube-controller-manager"}
}

// Pinning splits the CPUs the bench may use between the control plane
// (the first of them, CPU 0 on most machines) and everything else, as if
// the control plane had a machine of its own.
type Pinning struct {
	controlPlane, rest unix.CPUSet
	// ControlPlaneCPUs and RestCPUs are the CPUs of each side, for the report.
	ControlPlaneCPUs, RestCPUs []int
}

// NewPinning splits the CPUs this process may use: the first to the
// control plane, the others to the rest. It needs two at least.
func NewPinning() (*Pinning, error) {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil, fmt.Errorf("reading the bench's CPU affinity: %w", err)
	}
	cpus := cpusOf(allowed)
	if len(cpus) < 2 {
		return nil, fmt.Errorf("--pin-control-plane: needs at least 2 CPUs, the bench may use %v", cpus)
	}
	p := &Pinning{ControlPlaneCPUs: cpus[:1], RestCPUs: cpus[1:]}
	p.controlPlane = cpuSetOf(p.ControlPlaneCPUs)
	p.rest = cpuSetOf(p.RestCPUs)
	return p, nil
}

// cpusOf lists the CPUs of a set.
func cpusOf(set unix.CPUSet) []int {
	var cpus []int
	for cpu := 0; len(cpus) < set.Count(); cpu++ {
		if set.IsSet(cpu) {
			cpus = append(cpus, cpu)
		}
	}
	return cpus
}

func cpuSetOf(cpus []int) unix.CPUSet {
	var set unix.CPUSet
	for _, cpu := range cpus {
		set.Set(cpu)
	}
	return set
}

// String says where each side runs, for the table's title.
func (p *Pinning) String() string {
	return fmt.Sprintf("control plane (%s) pinned to CPU %s, kube-scheduler, the extender and the bench to CPU %s",
		strings.Join(ControlPlaneProcesses(), ", "), CPUList(p.ControlPlaneCPUs), CPUList(p.RestCPUs))
}

// CPUList writes cpus as a comma-separated list.
func CPUList(cpus []int) string {
	parts := make([]string, len(cpus))
	for i, c := range cpus {
		parts[i] = strconv.Itoa(c)
	}
	return strings.Join(parts, ",")
}

// PinBench moves the bench itself to the rest's CPUs. Processes it starts
// afterwards inherit that affinity.
func (p *Pinning) PinBench() error {
	return pinProcess(os.Getpid(), p.rest)
}

// pinRow puts every process of the row in dir on its side's CPUs, and
// returns how many of the control plane's it found.
func (p *Pinning) pinRow(dir string) (controlPlane int, err error) {
	for _, proc := range meter.ProcessesOf(dir) {
		set := p.rest
		if slices.Contains(ControlPlaneProcesses(), proc.Name) {
			set = p.controlPlane
			controlPlane++
		}
		if err := pinProcess(proc.Pid, set); err != nil {
			return controlPlane, fmt.Errorf("pinning %s (pid %d): %w", proc.Name, proc.Pid, err)
		}
	}
	return controlPlane, nil
}

// Split sums the CPU time of each side.
func (p *Pinning) Split(u meter.CPUUsage) (controlPlane, rest float64) {
	for name, t := range u {
		if slices.Contains(ControlPlaneProcesses(), name) {
			controlPlane += t.Seconds()
		} else {
			rest += t.Seconds()
		}
	}
	return controlPlane, rest
}

// pinProcess sets the affinity of every thread of pid to set. A thread
// started while it runs inherits its creator's affinity, which may not be
// set yet, so it goes over the threads again until none needed a change.
func pinProcess(pid int, set unix.CPUSet) error {
	for range 20 {
		tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
		if err != nil {
			return fmt.Errorf("listing the threads of process %d: %w", pid, err)
		}
		changed := false
		for _, task := range tasks {
			tid, err := strconv.Atoi(task.Name())
			if err != nil {
				continue
			}
			var now unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &now); err != nil {
				// The thread has ended.
				continue
			}
			if now == set {
				continue
			}
			if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
				return fmt.Errorf("setting the CPU affinity of thread %d of process %d: %w", tid, pid, err)
			}
			changed = true
		}
		if !changed {
			return nil
		}
	}
	return fmt.Errorf("process %d kept starting threads while its CPU affinity was set", pid)
}
