package framework

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// OverCommitted names every GPU that used holds more memory, cores or
// shares of than it has, and every GPU used that no GPUNode has.
func OverCommitted(nodes []gpuv1alpha1.GPUNode, used map[string]*placement.Hold) []string {
	capacity := map[string]gpuv1alpha1.GPUDevice{}
	for _, n := range nodes {
		for _, d := range n.Status.Devices {
			capacity[d.UUID] = d
		}
	}
	var out []string
	for uuid, u := range used {
		c, ok := capacity[uuid]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("allocations use GPU %s, which no GPUNode has", uuid))
		case u.MemoryMiB > c.MemoryMiB || u.Cores > c.Cores || u.Shares > c.ShareLimit:
			out = append(out, fmt.Sprintf("GPU %s over-committed: %d/%d MiB, %d/%d cores, %d/%d shares",
				uuid, u.MemoryMiB, c.MemoryMiB, u.Cores, c.Cores, u.Shares, c.ShareLimit))
		}
	}
	return out
}

// CheckGPUAccounting reads the cluster and fails the test unless the GPU
// accounting invariants hold: no GPU holds more memory, cores or shares
// than it has in the allocations of live pods, and every bound pod of the
// scheduler has exactly its own allocation, on its node.
func (cp *ControlPlane) CheckGPUAccounting(ctx context.Context, t *testing.T, schedulerName string) {
	t.Helper()
	nodes, err := cp.Tessera.GpuV1alpha1().GPUNodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Pods first: a pod's allocation is written before it is bound, so
	// every pod bound in this list has its allocation in the next, while
	// the other order reads as missing the allocation of a pod bound
	// between the two lists.
	pods, err := cp.Kube.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	allocs, err := cp.Tessera.GpuV1alpha1().GPUAllocations("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]*corev1.Pod{}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			live[p.Namespace+"/"+p.Name] = p
		}
	}
	used := map[string]*placement.Hold{}
	allocated := map[string]bool{}
	for _, a := range allocs.Items {
		key := a.Namespace + "/" + a.Name
		pod, ok := live[key]
		if !ok || pod.UID != a.Spec.PodUID || a.Status.Phase == gpuv1alpha1.AllocationFailed {
			continue
		}
		if pod.Spec.NodeName != "" && pod.Spec.NodeName != a.Spec.NodeName {
			t.Errorf("pod %s is on node %s but its allocation is on %s", key, pod.Spec.NodeName, a.Spec.NodeName)
		}
		allocated[key] = true
		AddGPUUse(used, &a)
	}
	for _, msg := range OverCommitted(nodes.Items, used) {
		t.Error(msg)
	}
	for key, pod := range live {
		if pod.Spec.NodeName != "" && pod.Spec.SchedulerName == schedulerName && !allocated[key] {
			t.Errorf("bound pod %s has no allocation of its own", key)
		}
	}
}
