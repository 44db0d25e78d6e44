package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/fixtures"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestInventoryAgainstAPIServer runs the command against a real API server
// holding three GPUs and three allocations, one of them failed and one from
// an init container, which hold nothing now, a ResourceClaim that
// kube-scheduler allocated on the first GPU in DRA mode, and one allocated
// a MIG instance of the third, which makes them on demand.
func TestInventoryAgainstAPIServer(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := cp.Tessera.GpuV1alpha1()

	framework.CreateGPUNode(ctx, t, cp.Tessera, "gpu-node-1", &gpuv1alpha1.GPUNodeStatus{Devices: []gpuv1alpha1.GPUDevice{
		{UUID: "GPU-1111", Index: 0, Model: "Tesla T4", MemoryMiB: 15360, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy},
		{UUID: "GPU-2222", Index: 1, Model: "Tesla T4", MemoryMiB: 15360, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUUnhealthy},
		{UUID: "GPU-3333", Index: 2, Model: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, Cores: 100, ShareLimit: 7, Health: gpuv1alpha1.GPUHealthy,
			MIGGeometry: fixtures.A100MIGGeometry()},
	}})
	allocation := func(name string, kind gpuv1alpha1.ContainerKind, memory int64, cores int32) *gpuv1alpha1.GPUAllocation {
		return &gpuv1alpha1.GPUAllocation{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
			Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: types.UID("uid-" + name), NodeName: "gpu-node-1",
				Containers: []gpuv1alpha1.ContainerAllocation{{Name: "c", Kind: kind,
					Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-1111", MemoryMiB: memory, Cores: cores}}}}},
		}
	}
	for _, a := range []*gpuv1alpha1.GPUAllocation{
		allocation("train", gpuv1alpha1.ContainerApp, 4000, 30),
		allocation("serve", gpuv1alpha1.ContainerSidecar, 2000, 20),
		allocation("setup", gpuv1alpha1.ContainerInit, 9000, 50),
	} {
		if _, err := client.GPUAllocations("default").Create(ctx, a, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	failed, err := client.GPUAllocations("default").Create(ctx, allocation("broken", gpuv1alpha1.ContainerApp, 1000, 10), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	failed.Status.Phase = gpuv1alpha1.AllocationFailed
	if _, err := client.GPUAllocations("default").UpdateStatus(ctx, failed, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	allocateClaim := func(name string, result resourceapi.DeviceRequestAllocationResult) {
		claim, err := cp.Kube.ResourceV1().ResourceClaims("default").Create(ctx, &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: gpuv1alpha1.DRADriverName},
			}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{Results: []resourceapi.DeviceRequestAllocationResult{result}}}
		if _, err := cp.Kube.ResourceV1().ResourceClaims("default").UpdateStatus(ctx, claim, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	allocateClaim("dra", resourceapi.DeviceRequestAllocationResult{
		Request: "gpu", Driver: gpuv1alpha1.DRADriverName, Pool: "gpu-node-1", Device: "gpu-0", ShareID: ptr.To(types.UID("3f2a0c1e-0000-4000-8000-000000000001")),
		ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{
			gpuv1alpha1.DRACapacityMemory: resource.MustParse("5Gi"), gpuv1alpha1.DRACapacityCores: resource.MustParse("25"), gpuv1alpha1.DRACapacityShares: resource.MustParse("1"),
		},
	})
	// A MIG instance made on demand, allocated whole.
	allocateClaim("dra-mig", resourceapi.DeviceRequestAllocationResult{Request: "gpu", Driver: gpuv1alpha1.DRADriverName, Pool: "gpu-node-1", Device: "gpu-2-3g-40gb-at-4"})

	var out bytes.Buffer
	if err := run(ctx, []string{"--kubeconfig", cp.KubeconfigPath}, &out); err != nil {
		t.Fatalf("inventory: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := [][]string{
		{"NODE", "INDEX", "UUID", "MODEL", "MEMORY(MiB)", "ALLOCATED(MiB)", "CORES", "ALLOCATED", "SHARES", "HEALTH"},
		{"gpu-node-1", "0", "GPU-1111", "Tesla", "T4", "15360", "11120", "100", "75", "3/4", "Healthy"},
		{"gpu-node-1", "1", "GPU-2222", "Tesla", "T4", "15360", "0", "100", "0", "0/4", "Unhealthy"},
		{"gpu-node-1", "2", "GPU-3333", "NVIDIA", "A100-SXM4-80GB", "81920", "40192", "100", "43", "1/7", "Healthy"},
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s", len(lines), len(want), out.String())
	}
	for i, line := range lines {
		if got := strings.Fields(line); strings.Join(got, " ") != strings.Join(want[i], " ") {
			t.Errorf("line %d = %q, want fields %q", i, line, want[i])
		}
	}
}

// TestInventoryBadKubeconfig checks that a missing kubeconfig is named in
// the error.
func TestInventoryBadKubeconfig(t *testing.T) {
	err := run(context.Background(), []string{"--kubeconfig", "/nonexistent/kubeconfig"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/kubeconfig") {
		t.Fatalf("got %v, want an error naming the kubeconfig path", err)
	}
}
