package backlog

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// TestBacklogTracker follows one free and its bind through the tracker:
// the free opens a wait on its node, the bind that takes it ends the wait
// and is timed from the free.
func TestBacklogTracker(t *testing.T) {
	v, err := newBacklogView(2, 4, 10, harness.DefaultMix())
	if err != nil {
		t.Fatal(err)
	}
	whole := v.shapeIndex("1 whole GPU")
	tr := newBacklogTracker(v)
	t0 := time.Unix(1000, 0)
	// Both nodes full of whole GPUs; two whole-GPU pods wait.
	for n := range 2 {
		node := harness.NodeName(n)
		for g := range 4 {
			holds := []placement.Hold{{UUID: harness.GPUUUID(node, g), MemoryMiB: harness.GPUMemoryMiB, Shares: 1}}
			v.hold(node, holds)
			tr.run(node+"-"+harness.GPUUUID(node, g), node, holds)
		}
	}
	tr.wait("waiting-1", whole)
	tr.wait("waiting-2", whole)
	tr.scan(t0)
	tr.start(t0)

	name, p, ok := tr.pick(rand.New(rand.NewPCG(1, 2)))
	if !ok || name == "" {
		t.Fatal("no running pod to pick")
	}
	tr.freed(p, t0.Add(time.Second))
	tr.bound("waiting-1", p.node, p.holds, t0.Add(1500*time.Millisecond))
	// A bind of a pod that was not waiting changes nothing.
	tr.bound("not-waiting", p.node, p.holds, t0.Add(1600*time.Millisecond))
	m := tr.finish(t0.Add(10 * time.Second))
	if m.Frees != 1 || m.Placed != 1 || m.Taken != 1 || m.Unmatched != 0 || m.Waiting != 1 {
		t.Errorf("measures %+v, want one free taken by one bind, one pod still waiting", m)
	}
	if m.FreedToBound.P99 != 500*time.Millisecond || m.FreedToBound.P99AtLeast {
		t.Errorf("freed → bound %+v, want exactly 500ms", m.FreedToBound)
	}
	if m.FitWait.Longest != 500*time.Millisecond || m.FitWait.Waits != 1 || m.FitWait.OpenAtEnd {
		t.Errorf("fits-while-waiting %+v, want one wait of 500ms", m.FitWait)
	}
	if len(tr.names) != 8 {
		t.Errorf("%d pods running, want 8", len(tr.names))
	}
}
