package dra

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/deviceplugin/metrics"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
)

func TestClaimsSumTheNodesAllocationsByGPU(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	mine := allocatedClaim("uid-1", "mine",
		result{request: "a", device: "gpu-0", memory: "30Gi", cores: 40, shares: 1},
		result{request: "b", device: "gpu-1", memory: "1Gi", shares: 2})
	// Another node's result and another driver's, in one claim.
	mixed := allocatedClaim("uid-2", "mixed", result{request: "a", device: "gpu-0", memory: "10Gi", cores: 10, shares: 1})
	other := mixed.Status.Allocation.Devices.Results[0]
	other.Pool = "node-2"
	foreign := mixed.Status.Allocation.Devices.Results[0]
	foreign.Driver = "gpu.example.com"
	mixed.Status.Allocation.Devices.Results = append(mixed.Status.Allocation.Devices.Results, other, foreign)
	mixed.Spec.Devices.Requests = []resourceapi.DeviceRequest{{Name: "a"}}
	pending := &resourceapi.ResourceClaim{}
	pending.Name, pending.Namespace = "pending", "default"

	c := NewClaims(fake.NewClientset(mine, mixed, pending), testNode, testGPUs(), nodestatus.Scaling{SplitCount: 4, MemoryScaling: 1, CoreScaling: 1})
	ctx, cancel := context.WithCancel(ctx)
	t.Cleanup(func() { cancel(); c.Shutdown() })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}

	got := c.ByUUID()
	want := map[string]metrics.Usage{
		"GPU-a": {MemoryBytes: 40 << 30, Cores: 50, Shares: 2},
		"GPU-b": {MemoryBytes: 1 << 30, Shares: 2},
	}
	if len(got) != len(want) || got["GPU-a"] != want["GPU-a"] || got["GPU-b"] != want["GPU-b"] {
		t.Errorf("ByUUID = %+v, want %+v", got, want)
	}
	if m := c.MemoryMiB(); m["GPU-a"] != 40<<10 || m["GPU-b"] != 1<<10 {
		t.Errorf("MemoryMiB = %v", m)
	}
	held, err := c.lister.ResourceClaims("default").Get("mixed")
	if err != nil {
		t.Fatal(err)
	}
	if len(held.Spec.Devices.Requests) != 0 || len(held.Status.Allocation.Devices.Results) != 1 {
		t.Errorf("the cache holds %+v, want only this node's result of the driver", held)
	}
}
