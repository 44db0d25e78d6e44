package scheduler

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/test/framework"
)

const (
	// heldPrefix begins the reason of every pod the fit gate holds.
	heldPrefix = "held by Tessera until GPUs free up: "
	// heldLabel marks the pods a fit gate test expects held.
	heldLabel = "e2e.tessera.dev/held"
	// heldCount is how many pods TestPluginFitGate holds.
	heldCount = 300
)

// TestPluginFitGate holds hundreds of pods that no GPU has room for, and
// checks that each is told why and none is ever tried; that a pod that
// fits and a high-priority pod are placed ahead of them; that a free
// releases exactly the pod the freed room holds, in priority-then-age
// order; and that preemption still works while they are held.
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
	for i := range heldCount {
		pod := lowPod(fmt.Sprintf("held-%03d", i), group, 76800)
		pod.Labels = map[string]string{heldLabel: group}
		e.createPod(ctx, t, pod)
	}
	want := heldPrefix + "no GPU has 76800 MiB free; the largest free is 71680 MiB on " + node
	e.waitHeld(ctx, t, heldCount, want)

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
	e.checkHeldUnbound(ctx, t, heldCount)

	// Its room freed releases exactly the first held pod in queue order.
	first := e.firstHeld(ctx, t)
	e.deletePod(ctx, t, "high")
	e.waitBound(ctx, t, first)
	e.checkHeldUnbound(ctx, t, heldCount-1)
	e.checkNeverTried(ctx, t)

	// Preemption still works with pods held.
	preemptor := gpuPod("preemptor", group, nil, ctr{name: "main", count: 1, memory: 76800})
	preemptor.Spec.PriorityClassName = highPriority
	e.createPod(ctx, t, preemptor)
	e.waitBound(ctx, t, "preemptor")
	e.checkNoOvercommit(ctx, t)
}

// lowPod is a low-priority pod asking for one GPU with memoryMiB.
func lowPod(name, group string, memoryMiB int64) *corev1.Pod {
	pod := gpuPod(name, group, nil, ctr{name: "main", count: 1, memory: memoryMiB})
	pod.Spec.PriorityClassName = lowPriority
	return pod
}

// heldPods lists the pods labelled as expected held.
func (e *env) heldPods(ctx context.Context, t *testing.T) []corev1.Pod {
	t.Helper()
	list, err := e.cp.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: heldLabel})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// heldWhy returns why the fit gate holds the pod, "" when it does not say.
func heldWhy(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.HasPrefix(c.Message, heldPrefix) {
			return c.Message
		}
	}
	return ""
}

// waitHeld waits until count labelled pods are told why, each exactly.
func (e *env) waitHeld(ctx context.Context, t *testing.T, count int, want string) {
	t.Helper()
	framework.WaitFor(t, 120*time.Second, fmt.Sprintf("%d pods held, each told %q", count, want), func() (bool, string) {
		told, other := 0, ""
		pods := e.heldPods(ctx, t)
		for i := range pods {
			switch why := heldWhy(&pods[i]); why {
			case want:
				told++
			case "":
			default:
				other = pods[i].Name + " is told " + why
			}
		}
		return told == count && len(pods) == count, fmt.Sprintf("%d of %d told; %s", told, len(pods), other)
	})
}

// waitPodHeld waits until the pod is told it is held for want.
func (e *env) waitPodHeld(ctx context.Context, t *testing.T, name, want string) {
	t.Helper()
	framework.WaitFor(t, 60*time.Second, name+" held", func() (bool, string) {
		pod, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return heldWhy(pod) == want && pod.Spec.NodeName == "", "told " + heldWhy(pod) + "; events: " + e.events(ctx, name)
	})
}

// checkHeldUnbound checks, a few seconds after a free, that count
// labelled pods are still unbound.
func (e *env) checkHeldUnbound(ctx context.Context, t *testing.T, count int) {
	t.Helper()
	time.Sleep(3 * time.Second)
	unbound := 0
	for _, pod := range e.heldPods(ctx, t) {
		if pod.Spec.NodeName == "" {
			unbound++
		}
	}
	if unbound != count {
		t.Errorf("%d held pods are unbound, want %d: a free released more than its room holds", unbound, count)
	}
}

// firstHeld returns the unbound labelled pod that comes first in
// kube-scheduler's queue order: highest priority, then oldest, then UID,
// as Tessera's requeuer breaks ties.
func (e *env) firstHeld(ctx context.Context, t *testing.T) string {
	t.Helper()
	pods := slices.DeleteFunc(e.heldPods(ctx, t), func(p corev1.Pod) bool { return p.Spec.NodeName != "" })
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return cmp.Or(cmp.Compare(*b.Spec.Priority, *a.Spec.Priority),
			a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.UID, b.UID))
	})
	return pods[0].Name
}

// checkNeverTried checks that kube-scheduler turned none of the labelled
// pods away: every FailedScheduling event of theirs is the fit gate's.
func (e *env) checkNeverTried(ctx context.Context, t *testing.T) {
	t.Helper()
	list, err := e.cp.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, pod := range e.heldPods(ctx, t) {
		held[pod.Name] = true
	}
	tried := map[string]string{}
	for _, ev := range list.Items {
		if held[ev.InvolvedObject.Name] && !strings.HasPrefix(ev.Message, heldPrefix) {
			tried[ev.InvolvedObject.Name] = ev.Message
		}
	}
	if len(tried) > 0 {
		t.Errorf("kube-scheduler tried %d held pods, e.g. %v", len(tried), tried)
	}
}
