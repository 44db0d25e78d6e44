package scheduler

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/options"
	"github.com/tessera-gpu/tessera/test/framework"
)

// gatedHeldCount is how many pods TestExtenderFitGate holds.
const gatedHeldCount = 1000

// TestExtenderFitGate runs the extender with its fit gate on and creates
// pods with the scheduling gate, as the webhook would. It checks that the
// pods no GPU has room for stay gated, each told why; that a gated pod
// that fits is released and placed ahead of them; that the extender
// restarting leaves them gated; that each free then releases exactly the
// pod its room holds, in priority-then-age order; and that a pod that
// could preempt is released at once.
func TestExtenderFitGate(t *testing.T) {
	e := startEnvOn(t, framework.Options{ControllerManager: true}, nil, func(cfg *options.Config) { cfg.FitGate.Enabled = true })
	ctx := t.Context()
	const group, node = "liftgate", "liftgate-1"
	e.createPriorityClasses(ctx, t)
	e.addNode(ctx, t, node, group, 10, a100(0), a100(0))
	// A low-priority 10 GiB filler on each GPU leaves 70 GiB free on each.
	fillers := map[string]string{}
	for i := range 2 {
		name := fmt.Sprintf("filler-%d", i)
		e.createPod(ctx, t, gated(lowPod(name, group, 10240)))
		_, alloc := e.waitBound(ctx, t, name)
		fillers[alloc.Spec.Containers[0].Devices[0].UUID] = name
	}
	if len(fillers) != 2 {
		t.Fatalf("the fillers share a GPU: %v", fillers)
	}
	for i := range gatedHeldCount {
		pod := gated(lowPod(fmt.Sprintf("held-%03d", i), group, 76800))
		pod.Labels = map[string]string{framework.HeldLabel: group}
		e.createPod(ctx, t, pod)
	}
	want := framework.HeldPrefix + "no GPU has 76800 MiB free; the largest free is 71680 MiB on " + node
	e.held().WaitHeld(ctx, t, 180*time.Second, gatedHeldCount, want)
	e.checkGated(ctx, t, gatedHeldCount)

	// A gated pod that fits is released and placed, on one GPU.
	e.createPod(ctx, t, gated(lowPod("fits", group, 10240)))
	_, alloc := e.waitBound(ctx, t, "fits")
	freeGPU := ""
	for uuid := range fillers {
		if uuid != alloc.Spec.Containers[0].Devices[0].UUID {
			freeGPU = uuid
		}
	}
	// A high-priority pod that may not preempt is held too.
	high := gated(gpuPod("high", group, nil, ctr{name: "main", count: 1, memory: 76800}))
	high.Spec.PriorityClassName = highNeverPreempts
	e.createPod(ctx, t, high)
	e.waitPodHeld(ctx, t, "high", want)

	// An extender that starts again judges the gated pods anew and
	// releases none: their GPUs have not freed.
	e.extender.stop()
	e.extender.restart(t)
	time.Sleep(5 * time.Second)
	e.checkGated(ctx, t, gatedHeldCount)

	// The other GPU freed releases the high-priority pod alone.
	e.deletePod(ctx, t, fillers[freeGPU])
	if _, a := e.waitBound(ctx, t, "high"); a.Spec.Containers[0].Devices[0].UUID != freeGPU {
		t.Errorf("the high-priority pod went to %s, want the freed %s", a.Spec.Containers[0].Devices[0].UUID, freeGPU)
	}
	e.held().CheckUnbound(ctx, t, gatedHeldCount)
	e.checkGated(ctx, t, gatedHeldCount)

	// Its room freed releases exactly the first held pod in queue order.
	first := e.held().First(ctx, t, 1)[0]
	e.deletePod(ctx, t, "high")
	e.waitBound(ctx, t, first)
	e.held().CheckUnbound(ctx, t, gatedHeldCount-1)
	e.checkGated(ctx, t, gatedHeldCount-1)
	e.held().CheckNeverTried(ctx, t)

	// A pod that could preempt a lower-priority pod is released at once,
	// for kube-scheduler's preemption to judge (in extender mode it does
	// not preempt for GPU memory, which the pod is told).
	preemptor := gated(gpuPod("preemptor", group, nil, ctr{name: "main", count: 1, memory: 76800}))
	preemptor.Spec.PriorityClassName = highPriority
	e.createPod(ctx, t, preemptor)
	framework.WaitFor(t, 30*time.Second, "the preemptor released", func() (bool, string) {
		pod, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, "preemptor", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return !hasFitGate(pod), "told " + framework.HeldWhy(pod)
	})
	e.checkNoOvercommit(ctx, t)
}

// gated puts the fit gate on the pod, as the webhook does.
func gated(pod *corev1.Pod) *corev1.Pod {
	pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: gpuv1alpha1.FitSchedulingGate})
	return pod
}

// checkGated checks that exactly count of the pods labelled as expected
// held still have the fit gate, none of them bound, and that the
// condition of each says SchedulingGated.
func (e *env) checkGated(ctx context.Context, t *testing.T, count int) {
	t.Helper()
	n := 0
	for _, pod := range e.held().List(ctx, t) {
		if !hasFitGate(&pod) {
			continue
		}
		n++
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason != corev1.PodReasonSchedulingGated {
				t.Errorf("gated pod %s: PodScheduled reason %q, want %q", pod.Name, c.Reason, corev1.PodReasonSchedulingGated)
			}
		}
	}
	if n != count {
		t.Errorf("%d held pods are gated, want %d", n, count)
	}
}

// hasFitGate reports whether the pod has the fit gate still.
func hasFitGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == gpuv1alpha1.FitSchedulingGate {
			return true
		}
	}
	return false
}
