package dynamicmig

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestLiveNeeded keeps the instances of live allocations only: not those
// of a Failed allocation, of a pod that ended or is gone, of a pod of
// the same name that replaced the allocation's, or of another node.
func TestLiveNeeded(t *testing.T) {
	instance := func(start int32) gpuv1alpha1.MIGAllocation {
		return gpuv1alpha1.MIGAllocation{Profile: "1g.10gb", ProfileID: 19, Placement: gpuv1alpha1.MIGPlacement{Start: start, Size: 1}}
	}
	alloc := func(name, node string, start int32, phase gpuv1alpha1.AllocationPhase) *gpuv1alpha1.GPUAllocation {
		m := instance(start)
		return &gpuv1alpha1.GPUAllocation{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name},
			Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: types.UID("uid-" + name), NodeName: node, Containers: []gpuv1alpha1.ContainerAllocation{
				{Name: "main", Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-a", MIG: &m}, {UUID: "GPU-b"}}}}},
			Status: gpuv1alpha1.GPUAllocationStatus{Phase: phase},
		}
	}
	pod := func(name string, uid types.UID, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}, Status: corev1.PodStatus{Phase: phase}}
	}
	pods := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	allocs := []*gpuv1alpha1.GPUAllocation{
		alloc("running", "node-1", 0, gpuv1alpha1.AllocationAllocated),
		alloc("pending", "node-1", 1, ""),
		alloc("failed", "node-1", 2, gpuv1alpha1.AllocationFailed),
		alloc("ended", "node-1", 3, gpuv1alpha1.AllocationAllocated),
		alloc("gone", "node-1", 4, gpuv1alpha1.AllocationAllocated),
		alloc("replaced", "node-1", 5, gpuv1alpha1.AllocationAllocated),
		alloc("elsewhere", "node-2", 6, gpuv1alpha1.AllocationAllocated),
	}
	for _, p := range []*corev1.Pod{
		pod("running", "uid-running", corev1.PodRunning), pod("pending", "uid-pending", corev1.PodPending),
		pod("failed", "uid-failed", corev1.PodRunning), pod("ended", "uid-ended", corev1.PodSucceeded),
		pod("replaced", "uid-other", corev1.PodRunning), pod("elsewhere", "uid-elsewhere", corev1.PodRunning),
	} {
		if err := pods.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	live := Live{NodeName: "node-1", Allocations: func() []*gpuv1alpha1.GPUAllocation { return allocs }, Pods: corelisters.NewPodLister(pods)}
	got, err := live.Needed()
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]bool{0: true, 1: true}
	have := map[int32]bool{}
	for _, n := range got {
		if n.GPU != "GPU-a" {
			t.Errorf("needed on %s, want GPU-a only", n.GPU)
		}
		have[n.MIG.Placement.Start] = true
	}
	if !reflect.DeepEqual(have, want) {
		t.Errorf("needed instances at slices %v, want %v", have, want)
	}
}
