package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEarlierBindSeenLateLeavesTheNewReservation: a pod's binding is cut
// short (the answer lost, the binding never made) after its allocation
// was written on one node, while the extender's watch of GPUAllocations
// lags, as after an API server restart. kube-scheduler tries the pod
// again; it is reserved on a second node, and its bind there is slow to
// write. The watch catches up meanwhile and brings the first bind's
// allocation. That allocation must not take the new reservation's place:
// the second node's GPU stays counted, so another pod that could go only
// there waits instead of being given the GPU the pod's bind is about to
// take. Once the pod is bound, its first allocation is gone and the other
// pod is placed where it was.
func TestEarlierBindSeenLateLeavesTheNewReservation(t *testing.T) {
	faults := &apiFaults{}
	e := startEnvWrapped(t, faults.wrap)
	// Before the extender stops, whose watches must read to end.
	t.Cleanup(func() { faults.lagAllocations(false) })
	ctx := context.Background()
	const group = "latebind"
	nodes := []string{"latebind-1", "latebind-2"}
	for _, n := range nodes {
		e.addNode(ctx, t, n, group, 10, t4())
	}
	// One pod fills a GPU.
	whole := ctr{name: "main", count: 1, memory: 10000}

	faults.lagAllocations(true)
	lost, answer := faults.dropBindingAnswer("late-first")
	t.Cleanup(answer)
	e.createPod(ctx, t, gpuPod("late-first", group, nil, whole))
	select {
	case <-lost:
	case <-time.After(time.Minute):
		t.Fatal("the extender did not bind pod late-first")
	}
	first, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).Get(ctx, "late-first", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the first bind's allocation: %v", err)
	}
	// The pod's next try goes to the other node: the first is cordoned
	// before the binding is answered.
	firstNode, secondNode := first.Spec.NodeName, nodes[0]
	if secondNode == firstNode {
		secondNode = nodes[1]
	}
	e.cordon(ctx, t, firstNode, true)
	held, release := faults.holdAllocationCreate("late-first")
	t.Cleanup(release)
	answer()
	select {
	case <-held:
	case <-time.After(time.Minute):
		t.Fatal("pod late-first was not tried again")
	}

	// The second bind has reserved the GPU of the second node and waits to
	// write; the watch brings the first bind's allocation now.
	faults.lagAllocations(false)
	// What the watch held back reaches the view within moments; the pod
	// created after may find the second node's GPU taken only if the view
	// counts it.
	time.Sleep(2 * time.Second)
	e.createPod(ctx, t, gpuPod("late-second", group, nil, whole))
	e.waitFailedScheduling(ctx, t, "late-second", "not enough memory")
	if events := e.events(ctx, "late-second"); strings.Contains(events, "in-flight") {
		t.Fatalf("late-second was placed on the GPU that late-first's bind holds, and its bind waited behind that one: %s", events)
	}

	release()
	pod, _ := e.waitBound(ctx, t, "late-first")
	if pod.Spec.NodeName != secondNode {
		t.Fatalf("late-first is bound to %s, want %s", pod.Spec.NodeName, secondNode)
	}
	e.cordon(ctx, t, firstNode, false)
	other, _ := e.waitBound(ctx, t, "late-second")
	if other.Spec.NodeName != firstNode {
		t.Errorf("late-second is bound to %s, want %s", other.Spec.NodeName, firstNode)
	}
	e.cp.CheckGPUAccounting(ctx, t, "tessera-scheduler")
	e.checkOneInFlight(t)
}

// cordon cordons or uncordons every GPU of the node, as an operator does
// through the GPUNode's spec.
func (e *env) cordon(ctx context.Context, t *testing.T, node string, on bool) {
	t.Helper()
	gn, err := e.cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gn.Spec.CordonedDevices = nil
	if on {
		for _, d := range gn.Status.Devices {
			gn.Spec.CordonedDevices = append(gn.Spec.CordonedDevices, d.UUID)
		}
	}
	if _, err := e.cp.Tessera.GpuV1alpha1().GPUNodes().Update(ctx, gn, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("cordoning the GPUs of %s: %v", node, err)
	}
}
