package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/test/framework"
)

// heldCount is how many pods TestPluginFitGate holds.
const heldCount = 2000

// TestPluginFitGate holds thousands of pods that no GPU has room for, and
// checks that each is told why, parked outside kube-scheduler's queue and
// never tried; that a pod that fits and a high-priority pod are placed
// ahead of them; that tessera-scheduler restarting leaves them parked;
// that a free then releases exactly the pod the freed room holds, in
// priority-then-age order; and that preemption still works while they are
// held.
func TestPluginFitGate(t *testing.T) {
	e := startPluginEnv(t)
	ctx := t.Context()
	const group, node = "fitgate", "fitgate-1"
	e.createPriorityClasses(ctx, t)
	e.addNode(ctx, t, node, group, 10, a100(0), a100(0))
	// A low-priority 10 GiB filler on each GPU leaves 70 GiB free on each.
	fillers := map[string]string{}
	for i := range 2 {
		name := fmt.Sprintf("filler-%d", i)
		e.createPod(ctx, t, lowPod(name, group, 10240))
		_, alloc := e.waitBound(ctx, t, name)
		fillers[alloc.Spec.Containers[0].Devices[0].UUID] = name
	}
	if len(fillers) != 2 {
		t.Fatalf("the fillers share a GPU: %v", fillers)
	}
	e.createHeld(ctx, t, "held", group, heldCount, 76800)
	want := framework.HeldPrefix + "no GPU has 76800 MiB free; the largest free is 71680 MiB on " + node
	e.held().WaitHeld(ctx, t, 240*time.Second, heldCount, want)
	e.held().WaitParked(ctx, t, 60*time.Second, heldCount)

	// A pod that comes parked is judged as any other: one that fits is
	// unparked and placed.
	byHand := lowPod("parked-by-hand", group, 10240)
	byHand.Labels = map[string]string{gpuv1alpha1.ParkedLabel: "true"}
	e.createPod(ctx, t, byHand)
	e.waitBound(ctx, t, "parked-by-hand")
	e.deletePod(ctx, t, "parked-by-hand")

	// A pod that fits passes by them, on one GPU.
	e.createPod(ctx, t, lowPod("fits", group, 10240))
	_, alloc := e.waitBound(ctx, t, "fits")
	freeGPU := ""
	for uuid := range fillers {
		if uuid != alloc.Spec.Containers[0].Devices[0].UUID {
			freeGPU = uuid
		}
	}
	// A high-priority pod that may not preempt is held too, and released
	// first when the other GPU frees.
	high := gpuPod("high", group, nil, ctr{name: "main", count: 1, memory: 76800})
	high.Spec.PriorityClassName = highNeverPreempts
	e.createPod(ctx, t, high)
	e.waitPodHeld(ctx, t, "high", want)
	e.deletePod(ctx, t, fillers[freeGPU])
	if _, a := e.waitBound(ctx, t, "high"); a.Spec.Containers[0].Devices[0].UUID != freeGPU {
		t.Errorf("the high-priority pod went to %s, want the freed %s", a.Spec.Containers[0].Devices[0].UUID, freeGPU)
	}
	e.held().CheckUnbound(ctx, t, heldCount)

	// A parked pod that is edited to ask for what fits is judged anew.
	e.parkedThenEdited(ctx, t, group, freeGPU, alloc.Spec.Containers[0].Devices[0].UUID)

	// A scheduler that starts again judges the parked pods anew and
	// leaves them parked: their GPUs have not freed.
	e.restartScheduler(t)
	time.Sleep(5 * time.Second)
	if parked := e.held().Parked(ctx, t); parked != heldCount {
		t.Errorf("after a restart %d pods are parked, want %d", parked, heldCount)
	}

	// Its room freed releases exactly the first held pod in queue order,
	// parked; the label comes off it, bound or not yet.
	first := e.held().First(ctx, t, 1)[0]
	e.deletePod(ctx, t, "high")
	e.waitBound(ctx, t, first)
	framework.WaitFor(t, 30*time.Second, first+" unparked", func() (bool, string) {
		pod, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, first, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pod.Labels[gpuv1alpha1.ParkedLabel] == "", "labels " + fmt.Sprint(pod.Labels)
	})
	e.held().CheckUnbound(ctx, t, heldCount-1)
	e.held().CheckNeverTried(ctx, t)

	// Preemption still works with pods held.
	preemptor := gpuPod("preemptor", group, nil, ctr{name: "main", count: 1, memory: 76800})
	preemptor.Spec.PriorityClassName = highPriority
	e.createPod(ctx, t, preemptor)
	e.waitBound(ctx, t, "preemptor")
	e.checkNoOvercommit(ctx, t)
}

// parkedThenEdited creates a pod that only the GPU full may hold,
// waits until it is parked, points it at the GPU roomy, and checks that
// it is placed there; it then deletes it.
func (e *env) parkedThenEdited(ctx context.Context, t *testing.T, group, full, roomy string) {
	t.Helper()
	pod := lowPod("edited", group, 10240)
	pod.Annotations = map[string]string{gpurequest.AnnotationGPUUUID: full}
	e.createPod(ctx, t, pod)
	framework.WaitFor(t, 60*time.Second, "edited parked", func() (bool, string) {
		pod, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, "edited", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pod.Labels[gpuv1alpha1.ParkedLabel] != "", "told " + framework.HeldWhy(pod)
	})
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, gpurequest.AnnotationGPUUUID, roomy)
	if _, err := e.cp.Kube.CoreV1().Pods(namespace).Patch(ctx, "edited", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, a := e.waitBound(ctx, t, "edited"); a.Spec.Containers[0].Devices[0].UUID != roomy {
		t.Errorf("the edited pod went to %s, want %s", a.Spec.Containers[0].Devices[0].UUID, roomy)
	}
	e.deletePod(ctx, t, "edited")
}

// lowPod is a low-priority pod asking for one GPU with memoryMiB.
func lowPod(name, group string, memoryMiB int64) *corev1.Pod {
	pod := gpuPod(name, group, nil, ctr{name: "main", count: 1, memory: memoryMiB})
	pod.Spec.PriorityClassName = lowPriority
	return pod
}

// createHeld creates count low-priority pods asking for one GPU with
// memoryMiB, labelled as expected held, named prefix-000 on.
func (e *env) createHeld(ctx context.Context, t *testing.T, prefix, group string, count int, memoryMiB int64) {
	t.Helper()
	for i := range count {
		pod := lowPod(fmt.Sprintf("%s-%03d", prefix, i), group, memoryMiB)
		pod.Labels = map[string]string{framework.HeldLabel: group}
		e.createPod(ctx, t, pod)
	}
}

// held are the pods labelled as expected held.
func (e *env) held() framework.HeldPods {
	return framework.HeldPods{Kube: e.cp.Kube, Namespace: namespace}
}

// waitPodHeld waits until the pod is told it is held for want.
func (e *env) waitPodHeld(ctx context.Context, t *testing.T, name, want string) {
	t.Helper()
	framework.WaitFor(t, 60*time.Second, name+" held", func() (bool, string) {
		pod, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return framework.HeldWhy(pod) == want && pod.Spec.NodeName == "", "told " + framework.HeldWhy(pod) + "; events: " + e.events(ctx, name)
	})
}
