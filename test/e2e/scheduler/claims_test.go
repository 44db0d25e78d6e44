package scheduler

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/test/framework"
)

// TestReleasedPodsTakeTheirRoom frees two nodes one after the other while
// pods are held, and checks that the pods released take the room each was
// released for: the older pod, which needs two GPUs at once, the fuller
// node's pair, and the first of the younger ones, of one GPU, the emptier
// node's GPU. None of them is turned away by kube-scheduler, and no GPU
// is over-committed: each pod's claim keeps its room from the other pods
// released, not from the pod itself. Whether, without claims, the younger
// pod's attempt would come first and take the pair's room (binpack scores
// the fuller node higher) depends on timing that this test does not
// control; TestReleasedPodsKeepTheirRoom in scheduler/plugin checks the
// filter's rule itself.
func TestReleasedPodsTakeTheirRoom(t *testing.T) {
	e := startPluginEnv(t)
	ctx := t.Context()
	const group, fuller, emptier = "claims", "claims-fuller", "claims-emptier"
	e.createPriorityClasses(ctx, t)
	e.addNode(ctx, t, fuller, group, 10, a100(0), a100(0), a100(0), a100(0), a100(0), a100(0))
	e.addNode(ctx, t, emptier, group, 10, a100(0))
	// Four GPUs of the fuller node stay full; two are freed at once, and
	// the emptier node's one GPU.
	fillers := []*corev1.Pod{
		gpuPod("stays", group, nil, ctr{name: "main", count: 4, memory: 81920}),
		gpuPod("pair", group, nil, ctr{name: "main", count: 2, memory: 81920}),
		lowPod("alone", group, 81920),
	}
	for _, pod := range fillers {
		pod.Spec.PriorityClassName = lowPriority
		e.createPod(ctx, t, pod)
		e.waitBound(ctx, t, pod.Name)
	}

	older := gpuPod("older", group, nil, ctr{name: "main", count: 2, memory: 81920})
	older.Spec.PriorityClassName = lowPriority
	older.Labels = map[string]string{framework.HeldLabel: group}
	e.createPod(ctx, t, older)
	e.held().WaitParked(ctx, t, 60*time.Second, 1)
	// The younger pods are held, and hidden from kube-scheduler in memory
	// for 2 s before they are parked.
	e.createHeld(ctx, t, "younger", group, 3, 51200)
	framework.WaitFor(t, 10*time.Second, "4 pods held", func() (bool, string) {
		told := 0
		for _, pod := range e.held().List(ctx, t) {
			if framework.HeldWhy(&pod) != "" {
				told++
			}
		}
		return told == 4, fmt.Sprintf("%d told", told)
	})

	// The older comes first in the queue, then one of the younger, which
	// were created within a second of one another.
	first := e.held().First(ctx, t, 2)
	e.deletePod(ctx, t, "pair")
	e.deletePod(ctx, t, "alone")
	for name, want := range map[string]string{first[0]: fuller, first[1]: emptier} {
		if bound, _ := e.waitBound(ctx, t, name); bound.Spec.NodeName != want {
			t.Errorf("%s went to %s, want %s, which it was released for", name, bound.Spec.NodeName, want)
		}
	}
	e.held().CheckUnbound(ctx, t, 2)
	e.held().CheckNeverTried(ctx, t)
	e.checkNoOvercommit(ctx, t)
}
