package plugin

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/scheduler/view"
)

// partlyFull adds a node with two 15360 MiB GPUs to the view, memoryMiB
// of each taken.
func partlyFull(p *Plugin, v *view.View, name string, memoryMiB int64) {
	addNode(p, v, name, 2, 15360)
	for i := range 2 {
		allocationOn(v, gpuPod(fmt.Sprintf("fill-%s-%d", name, i), memoryMiB), name, fmt.Sprintf("%s-GPU-%d", name, i), memoryMiB)
	}
	p.requeue.index.Freed(name)
}

// narrowed runs PreFilter for the pod over nodes nodes and returns the
// nodes it hands kube-scheduler, nil for all of them.
func narrowed(t *testing.T, p *Plugin, pod *v1.Pod, nodes int) []string {
	t.Helper()
	res, st := p.PreFilter(context.Background(), framework.NewCycleState(), pod, make([]fwk.NodeInfo, nodes))
	if !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	if res.AllNodes() {
		return nil
	}
	return sets.List(res.NodeNames)
}

// TestPreFilterNarrowsUnderABacklog checks that, while the fit gate holds
// pods, PreFilter hands kube-scheduler exactly the nodes whose GPUs could
// hold the pod, and all nodes when it holds none, when the pod could
// preempt, or when more nodes could hold it than kube-scheduler looks for.
func TestPreFilterNarrowsUnderABacklog(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	fillBoth(v) // node-1: 5120 MiB free on each GPU
	partlyFull(p, v, "node-2", 7360)
	partlyFull(p, v, "node-3", 15360)
	small, medium := gatedPod("small", 4000, 10), gatedPod("medium", 6000, 11)
	if got := narrowed(t, p, small, 3); got != nil {
		t.Errorf("with no pod held, PreFilter narrows to %v", got)
	}

	if p.gate(gatedPod("held", 10000, 0)).IsSuccess() {
		t.Fatal("a pod no GPU has room for passes the gate")
	}
	if got, want := narrowed(t, p, small, 3), []string{node, "node-2"}; !slices.Equal(got, want) {
		t.Errorf("a pod that node-1 and node-2 could hold is handed %v, want %v", got, want)
	}
	if got, want := narrowed(t, p, medium, 3), []string{"node-2"}; !slices.Equal(got, want) {
		t.Errorf("a pod that node-2 alone could hold is handed %v, want %v", got, want)
	}
	if got := narrowed(t, p, gatedPod("large", 12000, 12), 3); got != nil {
		t.Errorf("a pod no node could hold now is handed %v, not every node, whose Filter says why", got)
	}
	if got := narrowed(t, p, small, 1000); got == nil {
		t.Error("two nodes of 1000 were not few enough to narrow to")
	}

	bindLowPriority(p)
	preemptor := gatedPod("preemptor", 6000, 13)
	preemptor.Spec.Priority = ptr.To[int32](10)
	if got := narrowed(t, p, preemptor, 3); got != nil {
		t.Errorf("a pod that could preempt is handed %v: the dry run needs every node", got)
	}
	preemptor.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
	if got := narrowed(t, p, preemptor, 3); !slices.Equal(got, []string{"node-2"}) {
		t.Errorf("a pod that may not preempt is handed %v, want [node-2]", got)
	}
	holding := gatedPod("holding", 6000, 15)
	allocationOn(v, holding, node, "GPU-0", 1000)
	if got := narrowed(t, p, holding, 3); got != nil {
		t.Errorf("a pod that holds GPUs on node-1 is handed %v", got)
	}
	nominated := gatedPod("nominated", 6000, 14)
	nominated.Status.NominatedNodeName = "node-2"
	if got := narrowed(t, p, nominated, 3); got != nil {
		t.Errorf("a nominated pod is handed %v", got)
	}
}

// TestPreFilterNarrowsOnlyToFewNodes checks that PreFilter leaves the
// nodes to kube-scheduler when more could hold the pod than it looks for.
func TestPreFilterNarrowsOnlyToFewNodes(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	fillBoth(v)
	for i := range 120 {
		partlyFull(p, v, fmt.Sprintf("node-%03d", i), 7360)
	}
	if p.gate(gatedPod("held", 10000, 0)).IsSuccess() {
		t.Fatal("a pod no GPU has room for passes the gate")
	}
	if got := narrowed(t, p, gatedPod("small", 4000, 10), 121); got != nil {
		t.Errorf("121 of 121 nodes could hold the pod, more than the 100 kube-scheduler looks for, and PreFilter narrows to %d", len(got))
	}
	if got := narrowed(t, p, gatedPod("medium", 6000, 11), 2000); len(got) != 120 {
		t.Errorf("120 of 2000 nodes could hold the pod, and PreFilter narrows to %d", len(got))
	}
}

func TestFeasibleSought(t *testing.T) {
	for _, tc := range []struct{ nodes, want int }{{0, 0}, {50, 50}, {100, 100}, {200, 100}, {1000, 420}, {5000, 500}, {20000, 1000}} {
		if got := feasibleSought(tc.nodes); got != tc.want {
			t.Errorf("feasibleSought(%d) = %d, want %d", tc.nodes, got, tc.want)
		}
	}
}
