package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// TestPinRow starts stand-ins for etcd and kube-scheduler and checks that
// every thread of the first lands on the control plane's CPU and of the
// second on the rest, and that the bench's own affinity is left alone.
func TestPinRow(t *testing.T) {
	p, err := NewPinning()
	if err != nil {
		t.Skipf("pinning needs 2 CPUs: %v", err)
	}
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	pids := map[string]int{}
	for _, name := range []string{"etcd", "kube-scheduler"} {
		bin := filepath.Join(dir, name)
		if err := os.Symlink(sleep, bin); err != nil {
			t.Fatal(err)
		}
		// Its path names the row's directory, which ties it to the row.
		cmd := exec.Command(bin, "60")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pids[name] = cmd.Process.Pid
	}
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}

	n, err := p.pinRow(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("pinRow found %d control-plane processes, want 1 (etcd)", n)
	}
	for name, want := range map[string]unix.CPUSet{"etcd": p.controlPlane, "kube-scheduler": p.rest} {
		tasks, err := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pids[name]), "task"))
		if err != nil {
			t.Fatal(err)
		}
		for _, task := range tasks {
			tid, _ := strconv.Atoi(task.Name())
			var got unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &got); err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("%s thread %d may run on CPUs %v, not its side's %v", name, tid, cpusOf(got), cpusOf(want))
			}
		}
	}
	var after unix.CPUSet
	if err := unix.SchedGetaffinity(0, &after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Errorf("pinRow changed the bench's own affinity")
	}
}

func TestPinningSplitsTheCPUs(t *testing.T) {
	p, err := NewPinning()
	if err != nil {
		t.Skipf("pinning needs 2 CPUs: %v", err)
	}
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		t.Fatal(err)
	}
	if p.controlPlane.Count() != 1 || p.rest.Count() != allowed.Count()-1 {
		t.Fatalf("control plane on %d CPUs and the rest on %d, of %d", p.controlPlane.Count(), p.rest.Count(), allowed.Count())
	}
	for _, cpu := range p.RestCPUs {
		if p.controlPlane.IsSet(cpu) || !allowed.IsSet(cpu) {
			t.Errorf("CPU %d of the rest is the control plane's, or not the bench's", cpu)
		}
	}
	cp, rest := p.Split(meter.CPUUsage{"etcd": 2e9, "kube-apiserver": 3e9, "kube-controller-manager": 1e9, "kube-scheduler": 4e9, "bench": 1e9})
	if cp != 6 || rest != 5 {
		t.Errorf("split = %.1f s control plane, %.1f s rest; want 6 and 5", cp, rest)
	}
}
