package dynamicmig

import (
	"context"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu/nvmlfake"
)

const grace = time.Minute

// setup returns a manager over go-nvml's mocks of two A100s in MIG mode,
// the second unable to make compute instances, and the first GPU's
// smallest profile.
func setup(t *testing.T) (*Manager, *nvmlgpu.Backend, *nvmlfake.Node, *testingclock.FakeClock, gpuv1alpha1.MIGProfile) {
	t.Helper()
	node, err := nvmlfake.New(gpus.A100_SXM4_40GB, gpus.A100_SXM4_40GB)
	if err != nil {
		t.Fatal(err)
	}
	node.SetDynamicMIG(0, false)
	node.SetDynamicMIG(1, true)
	b := nvmlgpu.New(node, nvmlgpu.Options{DynamicMIG: true})
	inv, err := b.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Now())
	return New(b, clk, grace), b, node, clk, inv.Devices[0].MIGGeometry.Profiles[0]
}

func at(p gpuv1alpha1.MIGProfile, start int32) *gpuv1alpha1.MIGAllocation {
	return &gpuv1alpha1.MIGAllocation{Profile: p.Name, ProfileID: p.ProfileID, Placement: gpuv1alpha1.MIGPlacement{Start: start, Size: 1}}
}

// TestPrepare makes an instance, hands the same one out again to the
// same owner, hands out one just right that it has no record of (made
// before the daemon restarted), destroys one it made for another owner
// where a new one goes, and leaves nothing when the compute instance
// cannot be made.
func TestPrepare(t *testing.T) {
	ctx := context.Background()
	m, b, node, _, small := setup(t)
	gpu0 := node.UUID(0)
	first, err := m.Prepare(ctx, gpu0, "pod-a/main", at(small, 0))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := m.Prepare(ctx, gpu0, "pod-a/main", at(small, 0)); err != nil || again != first || node.MIGInstanceCount(0) != 1 {
		t.Errorf("again: %q, %v, %d instances; want %q and one instance", again, err, node.MIGInstanceCount(0), first)
	}
	// A daemon that stopped left an instance where the scheduler now
	// places another pod's.
	before, err := b.CreateMIG(ctx, gpu0, small.ProfileID, gpuv1alpha1.MIGPlacement{Start: 3, Size: 1})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := m.Prepare(ctx, gpu0, "pod-b/main", at(small, 3)); err != nil || got != before.UUID {
		t.Errorf("an instance made before the restart: got %q, %v; want it, %q", got, err, before.UUID)
	}
	remade, err := m.Prepare(ctx, gpu0, "pod-c/main", at(small, 3))
	if err != nil {
		t.Fatal(err)
	}
	if n := node.MIGInstanceCount(0); n != 2 || remade == before.UUID {
		t.Errorf("%d instances, pod-c got %q; want the first and a new one for pod-c in pod-b's stead", n, remade)
	}
	if _, err := m.Prepare(ctx, node.UUID(1), "pod-d/main", at(small, 0)); err == nil {
		t.Error("an instance without a compute instance was handed out")
	}
	if n := node.MIGInstanceCount(1); n != 0 {
		t.Errorf("%d GPU instances left after a failed compute instance", n)
	}
}

// TestReconcile destroys the instances no live allocation needs, keeps
// those one needs, and keeps one it has just made until the grace period
// is over, since its allocation may not be in the caches yet.
func TestReconcile(t *testing.T) {
	ctx := context.Background()
	m, b, node, clk, small := setup(t)
	gpu0 := node.UUID(0)
	if _, err := m.Prepare(ctx, gpu0, "pod-a/main", at(small, 0)); err != nil {
		t.Fatal(err)
	}
	for _, start := range []int32{1, 2} { // left by a daemon that stopped
		if _, err := b.CreateMIG(ctx, gpu0, small.ProfileID, gpuv1alpha1.MIGPlacement{Start: start, Size: 1}); err != nil {
			t.Fatal(err)
		}
	}
	needed := []Needed{{GPU: gpu0, MIG: *at(small, 1)}}
	if err := m.Reconcile(ctx, []string{gpu0}, needed); err != nil {
		t.Fatal(err)
	}
	if n := node.MIGInstanceCount(0); n != 2 {
		t.Fatalf("%d instances, want the needed one and the new one", n)
	}
	clk.Step(grace)
	if err := m.Reconcile(ctx, []string{gpu0}, needed); err != nil {
		t.Fatal(err)
	}
	left, err := b.MIGInstances(ctx, gpu0)
	if err != nil || len(left) != 1 || left[0].Placement.Start != 1 {
		t.Errorf("left %+v, %v; want the needed instance alone", left, err)
	}
	if err := m.Reconcile(ctx, []string{gpu0}, nil); err != nil || node.MIGInstanceCount(0) != 0 {
		t.Errorf("after its pod ended: %d instances, %v", node.MIGInstanceCount(0), err)
	}
	// An instance seen needed goes as soon as its pod ends, grace or not.
	if _, err := m.Prepare(ctx, gpu0, "pod-b/main", at(small, 4)); err != nil {
		t.Fatal(err)
	}
	if err := m.Reconcile(ctx, []string{gpu0}, []Needed{{GPU: gpu0, MIG: *at(small, 4)}}); err != nil || node.MIGInstanceCount(0) != 1 {
		t.Fatalf("while needed: %d instances, %v", node.MIGInstanceCount(0), err)
	}
	if err := m.Reconcile(ctx, []string{gpu0}, nil); err != nil || node.MIGInstanceCount(0) != 0 {
		t.Errorf("after the pod that needed it ended: %d instances, %v", node.MIGInstanceCount(0), err)
	}
}
