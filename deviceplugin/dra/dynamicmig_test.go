package dra

import (
	"context"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/tessera-gpu/tessera/deviceplugin/dynamicmig"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu/nvmlfake"
	"github.com/tessera-gpu/tessera/test/framework"
)

// dynamicMIGDriver returns a driver over go-nvml's mock of an A100 in MIG
// mode with no instances, which it makes on demand, the mock, and the
// instances the GPU may be cut into, as published.
func dynamicMIGDriver(t *testing.T) (testDriver, *nvmlgpu.Backend, *nvmlfake.Node, []migPartition) {
	t.Helper()
	node, err := nvmlfake.New(gpus.A100_SXM4_40GB)
	if err != nil {
		t.Fatal(err)
	}
	node.SetDynamicMIG(0, false)
	b := nvmlgpu.New(node, nvmlgpu.Options{DynamicMIG: true})
	inv, err := b.Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := dynamicmig.New(b, testingclock.NewFakeClock(time.Now()), time.Minute)
	d := newTestDriver(t, func(c *DriverConfig) { c.Devices, c.MIG = fixedDevices(inv.Devices), m })
	return d, b, node, migPartitions(d.cfg.Scaling.Device(inv.Devices[0]))
}

// TestPrepareMakesAndUnprepareDestroysMIGInstances prepares claims
// allocated instances of a GPU whose instances are made on demand: each
// gets its instance made through NVML, whole, with its own MIG UUID in
// the GPU's stead; a claim prepared again gets the same instance, or after
// a reboot a new one; one that would overlap a prepared instance is refused and makes nothing;
// and unpreparing a claim destroys its instance.
func TestPrepareMakesAndUnprepareDestroysMIGInstances(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	d, backend, node, parts := dynamicMIGDriver(t)
	first, second := parts[0], parts[1]
	if first.profile.Name != second.profile.Name || first.at.Start != 0 || second.at.Start == 0 {
		t.Fatalf("the smallest profile's first two placements are %+v and %+v", first, second)
	}
	a := allocatedClaim("uid-a", "a", result{request: "gpu", device: first.name})
	b := allocatedClaim("uid-b", "b", result{request: "gpu", device: second.name})
	got, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{a, b})
	if err != nil || got["uid-a"].Err != nil || got["uid-b"].Err != nil {
		t.Fatalf("Prepare: %v, %v, %v", err, got["uid-a"].Err, got["uid-b"].Err)
	}
	if n := node.MIGInstanceCount(0); n != 2 {
		t.Fatalf("%d MIG instances after preparing two claims, want 2", n)
	}
	view := framework.CDIRuntimeView(t, d.cfg.CDIDir)
	envOf := func(devices []kubeletplugin.Device) []string {
		return view.GetDevice(cdiIDs(devices, "gpu")[0]).ContainerEdits.Env
	}
	env := envOf(got["uid-a"].Devices)
	wantVisible := "NVIDIA_VISIBLE_DEVICES=" + nvmlfake.MIGUUID(node.UUID(0), 0, 0)
	wantMemory := "CUDA_DEVICE_MEMORY_LIMIT_0=" + strconv.FormatInt(first.profile.MemoryMiB, 10) + "m"
	if !slices.Contains(env, wantVisible) || !slices.Contains(env, wantMemory) || !slices.Contains(env, "CUDA_DEVICE_SM_LIMIT=100") {
		t.Errorf("claim a's container gets %v, want its instance whole: %s, %s and no compute limit", env, wantVisible, wantMemory)
	}

	again, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{a})
	if err != nil || again["uid-a"].Err != nil || node.MIGInstanceCount(0) != 2 || !slices.Equal(envOf(again["uid-a"].Devices), env) {
		t.Errorf("preparing claim a again: %v, %v, %d instances; want the same instance", err, again["uid-a"].Err, node.MIGInstanceCount(0))
	}

	// A reboot destroyed the instances; the restarted kubelet prepares the
	// claims again.
	made, err := backend.MIGInstances(ctx, node.UUID(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range made {
		if err := backend.DestroyMIG(ctx, node.UUID(0), m.GPUInstanceID); err != nil {
			t.Fatal(err)
		}
	}
	again, err = d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{a, b})
	if err != nil || again["uid-a"].Err != nil || again["uid-b"].Err != nil || node.MIGInstanceCount(0) != 2 {
		t.Errorf("preparing the claims again after a reboot: %v, %v, %v, %d instances; want both made anew", err, again["uid-a"].Err, again["uid-b"].Err, node.MIGInstanceCount(0))
	}

	overlapping := allocatedClaim("uid-c", "c", result{request: "gpu", device: first.name})
	got, err = d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{overlapping})
	if err != nil || got["uid-c"].Err == nil || node.MIGInstanceCount(0) != 2 {
		t.Errorf("a claim on claim a's slices: %v, %v, %d instances; want it refused, nothing made", err, got["uid-c"].Err, node.MIGInstanceCount(0))
	}

	unprepared, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: "uid-a"}})
	if err != nil || unprepared["uid-a"] != nil {
		t.Fatalf("Unprepare: %v, %v", err, unprepared["uid-a"])
	}
	if n := node.MIGInstanceCount(0); n != 1 {
		t.Errorf("%d MIG instances after unpreparing claim a, want claim b's alone", n)
	}
	needed, _ := d.NeededMIG()
	if len(needed) != 1 || needed[0].MIG.Placement != second.at {
		t.Errorf("the prepared claims need %+v, want claim b's instance", needed)
	}
}
