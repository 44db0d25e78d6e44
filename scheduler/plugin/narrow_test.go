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

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// partlyFull adds a node with two 15360 MiB GPUs to the view, memoryMiB
// of each taken.
func partlyFull(p *Plugin, v *view.View, name string, memoryMiB int64) {
	addNode(p, v, name, 2, 15360)
	for i := range 2 {
		allocationOn(v, gpuPod(fmt.Sprintf("fill-%s-%d", name, i), memoryMiB), name, fmt.Sprintf("%s-GPU-%d", name, i), memoryMiB)
	}
	p.requeue.Index().Freed(name)
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
// hold the pod, and every node when the gate holds none or in each case
// where it must not narrow. node-1 has 5120 MiB free on each GPU, node-2
// 8000 MiB, node-3 none.
func TestPreFilterNarrowsUnderABacklog(t *testing.T) {
	tests := []struct {
		name   string
		memory int64
		noHeld bool
		change func(p *Plugin, pod *v1.Pod)
		want   []string // nil: every node
	}{
		{name: "with no pod held, every node", memory: 4000, noHeld: true},
		{name: "a pod two nodes could hold, those two", memory: 4000, want: []string{node, "node-2"}},
		{name: "a pod one node could hold, that one", memory: 6000, want: []string{"node-2"}},
		{name: "a pod no node could hold now, every node, whose Filter says why", memory: 12000},
		{name: "a pod that could preempt, every node, for the dry run", memory: 6000, change: func(p *Plugin, pod *v1.Pod) {
			bindLowPriority(p)
			pod.Spec.Priority = ptr.To[int32](10)
		}},
		{name: "a pod that may not preempt, the node that could hold it", memory: 6000, want: []string{"node-2"}, change: func(p *Plugin, pod *v1.Pod) {
			bindLowPriority(p)
			pod.Spec.Priority = ptr.To[int32](10)
			pod.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
		}},
		{name: "a pod of the bound pods' priority, the node that could hold it", memory: 6000, want: []string{"node-2"}, change: func(p *Plugin, _ *v1.Pod) {
			bindLowPriority(p)
		}},
		{name: "a pod holding GPUs, every node: its own count as free for it", memory: 6000, change: func(p *Plugin, pod *v1.Pod) {
			allocationOn(p.view, pod, node, "GPU-0", 1000)
		}},
		{name: "a nominated pod, every node", memory: 6000, change: func(_ *Plugin, pod *v1.Pod) { pod.Status.NominatedNodeName = "node-2" }},
		{name: "a gang's pod, every node", memory: 6000, change: func(_ *Plugin, pod *v1.Pod) {
			pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("gang")}
		}},
		{name: "a pod of a gang with held room, every node", memory: 6000, change: func(_ *Plugin, pod *v1.Pod) {
			pod.Annotations = map[string]string{gpuv1alpha1.GangHoldAnnotation: "default/gang"}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, v, _ := newTestPlugin(t)
			fillBoth(v)
			partlyFull(p, v, "node-2", 7360)
			partlyFull(p, v, "node-3", 15360)
			if !tc.noHeld && p.gate(gatedPod("held", 10000, 0)).IsSuccess() {
				t.Fatal("a pod no GPU has room for passes the gate")
			}
			pod := gatedPod("pod", tc.memory, 10)
			if tc.change != nil {
				tc.change(p, pod)
			}
			if got := narrowed(t, p, pod, 3); !slices.Equal(got, tc.want) {
				t.Errorf("PreFilter hands kube-scheduler %v, want %v (nil: every node)", got, tc.want)
			}
		})
	}
}

// TestPreFilterNarrowsOnlyToFewNodes checks that PreFilter leaves the
// nodes to kube-scheduler when more could hold the pod than narrowLimit.
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
		t.Errorf("121 of 121 nodes could hold the pod, more than the 100 of narrowLimit, and PreFilter narrows to %d", len(got))
	}
	if got := narrowed(t, p, gatedPod("medium", 6000, 11), 2000); len(got) != 120 {
		t.Errorf("120 of 2000 nodes could hold the pod, and PreFilter narrows to %d", len(got))
	}
	if got := narrowed(t, p, gatedPod("medium", 6000, 11), 240); len(got) != 120 {
		t.Errorf("120 of 240 nodes could hold the pod, half, and PreFilter narrows to %d", len(got))
	}
	if got := narrowed(t, p, gatedPod("medium", 6000, 11), 238); got != nil {
		t.Errorf("120 of 238 nodes could hold the pod, more than half and than the 116 kube-scheduler looks for, and PreFilter narrows to %d", len(got))
	}
}

func TestNarrowLimit(t *testing.T) {
	tests := []struct{ nodes, sought, limit int }{
		{0, 0, 0}, {50, 50, 50}, {100, 100, 100}, {200, 100, 100}, {1000, 420, 500}, {5000, 500, 2500}, {20000, 1000, 10000},
	}
	for _, tc := range tests {
		if got := feasibleSought(tc.nodes); got != tc.sought {
			t.Errorf("feasibleSought(%d) = %d, want %d", tc.nodes, got, tc.sought)
		}
		if got := narrowLimit(tc.nodes); got != tc.limit {
			t.Errorf("narrowLimit(%d) = %d, want %d", tc.nodes, got, tc.limit)
		}
	}
}
