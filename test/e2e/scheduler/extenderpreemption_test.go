package scheduler

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/test/framework"
)

// midPriority is between lowPriority and highPriority.
const midPriority = "e2e-mid"

// testExtenderPreemption shows what extender mode's preempt verb does and
// what it cannot do, as docs/preemption.md, "Extender mode", says.
func testExtenderPreemption(ctx context.Context, t *testing.T, e *env) {
	for _, pc := range []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: lowPriority}, Value: 100},
		{ObjectMeta: metav1.ObjectMeta{Name: midPriority}, Value: 500},
		{ObjectMeta: metav1.ObjectMeta{Name: highPriority}, Value: 1000},
	} {
		if _, err := e.cp.Kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	t.Run("the GPU count is full: the victim is taken where it frees the slice on one GPU", func(t *testing.T) {
		testCountFullPreemption(ctx, t, e)
	})
	t.Run("memory is full: kube-scheduler finds no victims", func(t *testing.T) {
		testMemoryFullNoPreemption(ctx, t, e)
	})
}

// fillNode creates pods of the priority class pinned to the node, one after
// another, and returns their names and the GPU each got.
func (e *env) fillNode(ctx context.Context, t *testing.T, group, node, class string, c ctr, n int) ([]string, map[string]string) {
	t.Helper()
	var names []string
	gpuOf := map[string]string{}
	for i := range n {
		name := fmt.Sprintf("%s-%d", node, i)
		pod := gpuPod(name, group, nil, c)
		pod.Spec.NodeSelector[corev1.LabelHostname] = node
		pod.Spec.PriorityClassName = class
		e.createPod(ctx, t, pod)
		_, alloc := e.waitBound(ctx, t, name)
		gpuOf[name] = alloc.Spec.Containers[0].Devices[0].UUID
		names = append(names, name)
	}
	return names, gpuOf
}

// testCountFullPreemption: two nodes whose nvidia.com/gpu count (2 GPUs x
// split 2) is full, so kube-scheduler's dry run finds one victim on each.
// On "good" evicting its victim (mid priority) frees 10 GiB on the
// victim's GPU; on "bad" its victim (low priority, which kube-scheduler
// alone would rather evict) frees a count but leaves 8360 MiB on every
// GPU. The extender drops "bad": only the victim on "good" goes, and the
// pod gets that victim's GPU.
func testCountFullPreemption(ctx context.Context, t *testing.T, e *env) {
	group := "xpreempt-count"
	good, bad := group+"-good", group+"-bad"
	e.addNode(ctx, t, good, group, 2, t4(), t4())
	e.addNode(ctx, t, bad, group, 2, t4(), t4())
	goodPods, gpuOf := e.fillNode(ctx, t, group, good, midPriority, ctr{name: "main", count: 1, memory: 5120}, 4)
	badPods, _ := e.fillNode(ctx, t, group, bad, lowPriority, ctr{name: "main", count: 1, memory: 7000}, 4)

	name := group + "-preemptor"
	pod := gpuPod(name, group, nil, ctr{name: "main", count: 1, memory: 10240})
	pod.Spec.PriorityClassName = highPriority
	e.createPod(ctx, t, pod)
	bound, alloc := e.waitBound(ctx, t, name)
	if bound.Spec.NodeName != good {
		t.Errorf("preemptor bound to %s, want %s", bound.Spec.NodeName, good)
	}
	if gone := e.goneOf(ctx, t, badPods); len(gone) > 0 {
		t.Errorf("evicted %v on %s, where that frees no GPU slice for the pod", gone, bad)
	}
	gone := e.goneOf(ctx, t, goodPods)
	if len(gone) != 1 {
		t.Fatalf("evicted %v on %s, want one pod", gone, good)
	}
	if got := alloc.Spec.Containers[0].Devices[0].UUID; gpuOf[gone[0]] != got {
		t.Errorf("evicted %s from %s; the preemptor got %s", gone[0], gpuOf[gone[0]], got)
	}
	// The pod was told which pod would go, and why not on the other node.
	want := fmt.Sprintf("evicting %s/%s on node %s frees GPU", namespace, gone[0], good)
	framework.WaitFor(t, 30*time.Second, "the preemptor's "+preemption.ReasonPreempting+" event", func() (bool, string) {
		events := e.events(ctx, name)
		return strings.Contains(events, preemption.ReasonPreempting+": "+want) &&
			strings.Contains(events, "on node "+bad+" would not make room: without them the node had 0/2 GPUs that fit (2 not enough memory)"), events
	})
	e.checkNoOvercommit(ctx, t)
	for _, n := range append(append(badPods, goodPods...), name) {
		if n != gone[0] {
			e.deletePod(ctx, t, n)
		}
	}
}

// testMemoryFullNoPreemption: a node whose GPUs' memory is full and whose
// nvidia.com/gpu count is not. kube-scheduler's dry run re-runs only its
// own filters, which the pod passes with every lower-priority pod back in
// place, so it finds no victims, never asks the extender, and evicts
// nothing: extender mode cannot preempt for GPU memory (plugin mode can).
// The extender's filter tells the pod which pod would have to go.
func testMemoryFullNoPreemption(ctx context.Context, t *testing.T, e *env) {
	group := "xpreempt-memory"
	node := group + "-node"
	e.addNode(ctx, t, node, group, 10, t4(), t4())
	low, _ := e.fillNode(ctx, t, group, node, lowPriority, ctr{name: "main", count: 1, memory: 10240}, 2)

	name := group + "-preemptor"
	pod := gpuPod(name, group, nil, ctr{name: "main", count: 1, memory: 10240})
	pod.Spec.PriorityClassName = highPriority
	e.createPod(ctx, t, pod)
	e.waitFailedScheduling(ctx, t, name, fmt.Sprintf("preemption: expected at least one victim pod on node %q", node))
	// Give a wrong preemption time to happen: kube-scheduler retries the
	// pod and would evict at once.
	time.Sleep(3 * time.Second)
	if gone := e.goneOf(ctx, t, low); len(gone) > 0 {
		t.Errorf("evicted %v; extender mode cannot preempt for memory, want none", gone)
	}
	if p, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
		t.Errorf("preemptor: err %v, bound to %q; want it pending", err, p.Spec.NodeName)
	}
	// The extender's filter tells the pod which pod would have to go.
	want := fmt.Sprintf("%s: evicting %s/%s on node %s frees GPU", preemption.ReasonNotHelpful, namespace, low[0], node)
	framework.WaitFor(t, 30*time.Second, "the preemptor's "+preemption.ReasonNotHelpful+" event", func() (bool, string) {
		events := e.events(ctx, name)
		return strings.Count(events, preemption.ReasonNotHelpful+":") == 1 && strings.Contains(events, want) &&
			strings.Contains(events, "but kube-scheduler does not preempt for GPU memory, cores or shares in extender mode"), events
	})
	if events := e.events(ctx, name); strings.Contains(events, preemption.ReasonPreempting+":") {
		t.Errorf("the preemptor's events %q; kube-scheduler never asks the extender here", events)
	}
	for _, n := range append(low, name) {
		e.deletePod(ctx, t, n)
	}
}
