package plugin

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/view"
)

// cluster adds nodes n00, n01, ... with one 80 GiB GPU each, node i
// holding used[i] MiB, and returns kube-scheduler's snapshot of them.
func cluster(p *Plugin, v *view.View, used []int64) []fwk.NodeInfo {
	var nodes []fwk.NodeInfo
	for i, u := range used {
		name := fmt.Sprintf("n%02d", i)
		addNode(p, v, name, 1, 81920)
		if u > 0 {
			allocationOn(v, gpuPod("on-"+name, u), name, name+"-GPU-0", u)
		}
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		nodes = append(nodes, ni)
	}
	return nodes
}

func names(r *fwk.PreFilterResult) []string {
	if r == nil {
		return nil
	}
	return sets.List(r.NodeNames)
}

// TestNarrow checks which nodes PreFilter gives kube-scheduler: those where
// the pod's GPUs fit now, at most narrowedNodes of them, the busiest first
// under binpack; every node (nil) when none fits, so that preemption looks
// at every node.
func TestNarrow(t *testing.T) {
	full, empty := int64(81920), int64(0)
	tests := []struct {
		name  string
		used  func(i int) int64
		taint func(i int) bool
		want  []string
	}{
		{
			name: "nodes that cannot fit are left out",
			used: func(i int) int64 { return map[bool]int64{true: empty, false: full}[i%10 == 3] },
			want: []string{"n03", "n13", "n23", "n33"},
		},
		{
			name: "no node fits: every node",
			used: func(int) int64 { return full },
		},
		{
			name: "the busiest nodes that fit under binpack",
			// Node i holds i GiB: the busiest are the last.
			used: func(i int) int64 { return int64(i) * 1024 },
			want: []string{"n24", "n25", "n26", "n27", "n28", "n29", "n30", "n31", "n32", "n33", "n34", "n35", "n36", "n37", "n38", "n39"},
		},
		{
			name:  "nodes whose taints turn the pod away are passed by",
			used:  func(i int) int64 { return int64(i) * 1024 },
			taint: func(i int) bool { return i >= 30 },
			want:  []string{"n14", "n15", "n16", "n17", "n18", "n19", "n20", "n21", "n22", "n23", "n24", "n25", "n26", "n27", "n28", "n29"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, v, _ := newTestPlugin(t)
			used := make([]int64, 40)
			for i := range used {
				used[i] = tc.used(i)
			}
			nodes := cluster(p, v, used)
			for i, ni := range nodes {
				if tc.taint != nil && tc.taint(i) {
					ni.Node().Spec.Taints = []v1.Taint{{Key: "dedicated", Value: "other", Effect: v1.TaintEffectNoSchedule}}
				}
			}
			pod := gpuPod("pod", 10240)
			state := framework.NewCycleState()
			result, st := p.PreFilter(context.Background(), state, pod, nodes)
			wantCode(t, "PreFilter", st, fwk.Success)
			if got := names(result); !slices.Equal(got, tc.want) {
				t.Errorf("PreFilter gave nodes %v, want %v", got, tc.want)
			}
			if got, want := state.ShouldSkipAllPostFilterPlugins(), tc.want != nil; got != want {
				t.Errorf("PostFilter skipped: %v, want %v", got, want)
			}
		})
	}
}

// TestNarrowedCycleFails checks that a narrowed cycle skips preemption and
// activates the pod, and that when it failed (the pod comes back without
// having been placed) the next cycle looks at every node, with preemption.
func TestNarrowedCycleFails(t *testing.T) {
	p, v, act := newTestPlugin(t)
	used := make([]int64, 40)
	nodes := cluster(p, v, used)
	pod := gpuPod("pod", 10240)

	first := framework.NewCycleState()
	result, st := p.PreFilter(context.Background(), first, pod, nodes)
	wantCode(t, "first PreFilter", st, fwk.Success)
	if len(names(result)) != narrowedNodes || !first.ShouldSkipAllPostFilterPlugins() {
		t.Fatalf("first cycle: nodes %v, PostFilter skipped %v; want %d nodes, skipped", names(result), first.ShouldSkipAllPostFilterPlugins(), narrowedNodes)
	}
	if got := act.take(); !slices.Equal(got, []string{"default/pod"}) {
		t.Errorf("narrowed cycle activated %v, want the pod, to be retried if the cycle fails", got)
	}

	// kube-scheduler's other filters turned every narrowed node away.
	second := framework.NewCycleState()
	result, st = p.PreFilter(context.Background(), second, pod, nodes)
	wantCode(t, "second PreFilter", st, fwk.Success)
	if result != nil || second.ShouldSkipAllPostFilterPlugins() {
		t.Errorf("cycle after a narrowed one failed: nodes %v, PostFilter skipped %v; want every node, preemption", names(result), second.ShouldSkipAllPostFilterPlugins())
	}

	// Placed, and back (its binding failed): narrowed again.
	wantCode(t, "Reserve", p.Reserve(context.Background(), second, pod, "n00"), fwk.Success)
	p.Unreserve(context.Background(), second, pod, "n00")
	if result, _ := p.PreFilter(context.Background(), framework.NewCycleState(), pod, nodes); result == nil {
		t.Errorf("cycle after the pod was placed: every node, want narrowed")
	}
}

// BenchmarkPreFilter measures what narrowing adds to a pod's cycle: one op
// is PreFilter of a 10 GiB pod over 1,000 nodes of 8 GPUs, half of each
// node's GPUs full.
func BenchmarkPreFilter(b *testing.B) {
	p, v, _ := newTestPlugin(b)
	var nodes []fwk.NodeInfo
	for i := range 1000 {
		name := fmt.Sprintf("n%04d", i)
		addNode(p, v, name, 8, 81920)
		for g := range 4 {
			allocationOn(v, gpuPod(fmt.Sprintf("on-%s-%d", name, g), 81920), name, fmt.Sprintf("%s-GPU-%d", name, g), 81920)
		}
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}})
		nodes = append(nodes, ni)
	}
	pod := gpuPod("pod", 10240)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		// A new cycle of a pod placed after its last one: narrowed.
		p.requeue.placed(pod.UID, "")
		if r, _ := p.PreFilter(ctx, framework.NewCycleState(), pod, nodes); r == nil {
			b.Fatal("PreFilter did not narrow")
		}
	}
}
