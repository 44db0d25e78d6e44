package scheduler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestPluginFitGateNeverHoldsWhatFits takes random steps (pods of random
// shapes created, bound pods deleted) and after each creation checks that
// the fit gate did not hold the pod while some node could hold its GPUs:
// a pod held stays held only while, in the GPUNodes and GPUAllocations,
// no node has room for it. A gate that holds every pod fails at step 0.
func TestPluginFitGateNeverHoldsWhatFits(t *testing.T) {
	e := startPluginEnv(t)
	ctx := t.Context()
	const group, steps = "neverholds", 30
	e.addNode(ctx, t, "neverholds-a", group, 10, a100(0), a100(0))
	e.addNode(ctx, t, "neverholds-b", group, 10, t4(), t4(), t4(), t4())
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := []ctr{
		{name: "main", count: 1, memory: 5120}, {name: "main", count: 1, memory: 12288},
		{name: "main", count: 1, memory: 40960}, {name: "main", count: 2, memory: 10240},
		{name: "main", count: 1, memory: 76800}, {name: "main", count: 1, core: 100},
	}
	var bound []string
	held := 0
	for step := range steps {
		if len(bound) > 0 && rng.IntN(3) == 0 {
			i := rng.IntN(len(bound))
			e.deletePod(ctx, t, bound[i])
			bound = append(bound[:i], bound[i+1:]...)
		}
		e.waitSettled(ctx, t, group)
		name := fmt.Sprintf("step-%02d", step)
		c := shapes[rng.IntN(len(shapes))]
		e.createPod(ctx, t, gpuPod(name, group, nil, c))
		if e.waitBoundOrRightlyHeld(ctx, t, step, name) {
			bound = append(bound, name)
		} else {
			held++
		}
	}
	t.Logf("%d of %d pods were held when created, each while no node could hold it", held, steps)
	if held == 0 {
		t.Error("no pod was held: the steps never filled the nodes")
	}
	e.checkNoOvercommit(ctx, t)
}

// waitSettled waits until each of the group's pods is bound or held by the
// fit gate.
func (e *env) waitSettled(ctx context.Context, t *testing.T, group string) {
	t.Helper()
	framework.WaitFor(t, 60*time.Second, "the pods bound or held", func() (bool, string) {
		list, err := e.cp.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		for i := range list.Items {
			pod := &list.Items[i]
			if pod.Spec.NodeSelector[groupLabel] == group && pod.DeletionTimestamp == nil && pod.Spec.NodeName == "" && framework.HeldWhy(pod) == "" {
				return false, pod.Name + " is neither bound nor held: " + e.events(ctx, pod.Name)
			}
		}
		return true, ""
	})
}

// waitBoundOrRightlyHeld waits until the pod is bound, and returns true;
// or until it is held while no node could hold its GPUs, and returns
// false. It fails the test when the pod stays held while a node could.
func (e *env) waitBoundOrRightlyHeld(ctx context.Context, t *testing.T, step int, name string) bool {
	t.Helper()
	isBound := false
	framework.WaitFor(t, 30*time.Second, fmt.Sprintf("step %d: %s bound, or held while no node could hold it", step, name), func() (bool, string) {
		pod, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		if pod.Spec.NodeName != "" {
			isBound = true
			return true, ""
		}
		if framework.HeldWhy(pod) == "" {
			return false, "not yet judged"
		}
		if node := e.nodeWithRoom(ctx, t, pod); node != "" {
			return false, fmt.Sprintf("held (%s) though node %s could hold it", framework.HeldWhy(pod), node)
		}
		return true, ""
	})
	return isBound
}

// nodeWithRoom returns a node that could hold the pod's GPUs as the
// GPUNodes and the allocations of the pods not being deleted say, or "".
func (e *env) nodeWithRoom(ctx context.Context, t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	parser := podrequest.Parser{ResourceNames: gpurequest.DefaultResourceNames(), DefaultNodePolicy: gpurequest.Binpack, DefaultGPUPolicy: gpurequest.Spread}
	req, err := parser.Parse(pod)
	if err != nil {
		t.Fatal(err)
	}
	gpuNodes, err := e.cp.Tessera.GpuV1alpha1().GPUNodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	allocs, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods, err := e.cp.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			live[string(p.UID)] = true
		}
	}
	for i := range gpuNodes.Items {
		n := placement.NewNode(&gpuNodes.Items[i], nil)
		for _, a := range allocs.Items {
			if a.Spec.NodeName == n.Name && live[string(a.Spec.PodUID)] {
				n.Add(placement.Holds(a.Spec.Containers))
			}
		}
		if _, f := placement.Fit(&n, req.Request); f == nil {
			return n.Name
		}
	}
	return ""
}
