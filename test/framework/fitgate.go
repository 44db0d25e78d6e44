package framework

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
	"k8s.io/client-go/kubernetes"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// HeldPrefix begins the reason of every pod a fit gate holds, in every
// mode.
const HeldPrefix = "held by Tessera until GPUs free up: "

// HeldLabel marks the pods a fit gate test expects held.
const HeldLabel = "e2e.tessera.dev/held"

// HeldPods are the pods of a namespace labelled HeldLabel, as a fit gate
// test expects them held.
type HeldPods struct {
	Kube      kubernetes.Interface
	Namespace string
}

// List lists them.
func (h HeldPods) List(ctx context.Context, t testing.TB) []corev1.Pod {
	t.Helper()
	list, err := h.Kube.CoreV1().Pods(h.Namespace).List(ctx, metav1.ListOptions{LabelSelector: HeldLabel})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// HeldWhy returns why a fit gate holds the pod, "" when it does not say.
func HeldWhy(pod *corev1.Pod) string {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && strings.HasPrefix(c.Message, HeldPrefix) {
			return c.Message
		}
	}
	return ""
}

// WaitHeld waits until count labelled pods are told why, each exactly.
func (h HeldPods) WaitHeld(ctx context.Context, t testing.TB, timeout time.Duration, count int, want string) {
	t.Helper()
	WaitFor(t, timeout, fmt.Sprintf("%d pods held, each told %q", count, want), func() (bool, string) {
		told, other := 0, ""
		pods := h.List(ctx, t)
		for i := range pods {
			switch why := HeldWhy(&pods[i]); why {
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

// Parked counts the labelled pods parked outside kube-scheduler's queue.
func (h HeldPods) Parked(ctx context.Context, t testing.TB) int {
	t.Helper()
	list, err := h.Kube.CoreV1().Pods(h.Namespace).List(ctx, metav1.ListOptions{LabelSelector: HeldLabel + "," + gpuv1alpha1.ParkedLabel})
	if err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// WaitParked waits until count labelled pods are parked.
func (h HeldPods) WaitParked(ctx context.Context, t testing.TB, timeout time.Duration, count int) {
	t.Helper()
	WaitFor(t, timeout, fmt.Sprintf("%d held pods parked", count), func() (bool, string) {
		n := h.Parked(ctx, t)
		return n == count, fmt.Sprintf("%d parked", n)
	})
}

// WaitPodParked waits until the pod name carries the parked label, when
// parked is set, or does not; the pod need not be labelled as held.
func (h HeldPods) WaitPodParked(ctx context.Context, t testing.TB, timeout time.Duration, name string, parked bool) {
	t.Helper()
	what := name + " unparked"
	if parked {
		what = name + " parked"
	}
	WaitFor(t, timeout, what, func() (bool, string) {
		pod, err := h.Kube.CoreV1().Pods(h.Namespace).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return (pod.Labels[gpuv1alpha1.ParkedLabel] != "") == parked, "labels " + fmt.Sprint(pod.Labels) + ", told " + HeldWhy(pod)
	})
}

// First returns the n unbound labelled pods that come first in
// kube-scheduler's queue order: highest priority, then oldest, then UID,
// as Tessera's requeuer breaks ties.
func (h HeldPods) First(ctx context.Context, t testing.TB, n int) []string {
	t.Helper()
	pods := slices.DeleteFunc(h.List(ctx, t), func(p corev1.Pod) bool { return p.Spec.NodeName != "" })
	slices.SortFunc(pods, func(a, b corev1.Pod) int {
		return cmp.Or(cmp.Compare(*b.Spec.Priority, *a.Spec.Priority),
			a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(a.UID, b.UID))
	})
	var names []string
	for _, p := range pods[:min(n, len(pods))] {
		names = append(names, p.Name)
	}
	return names
}

// CheckUnbound checks, a few seconds after a free, that count labelled
// pods are still unbound.
func (h HeldPods) CheckUnbound(ctx context.Context, t testing.TB, count int) {
	t.Helper()
	time.Sleep(3 * time.Second)
	unbound := 0
	for _, pod := range h.List(ctx, t) {
		if pod.Spec.NodeName == "" {
			unbound++
		}
	}
	if unbound != count {
		t.Errorf("%d held pods are unbound, want %d: a free released more than its room holds", unbound, count)
	}
}

// CheckNeverTried checks that kube-scheduler turned none of the labelled
// pods away: every FailedScheduling event of theirs is the fit gate's.
func (h HeldPods) CheckNeverTried(ctx context.Context, t testing.TB) {
	t.Helper()
	list, err := h.Kube.CoreV1().Events(h.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "reason=FailedScheduling"})
	if err != nil {
		t.Fatal(err)
	}
	held := map[string]bool{}
	for _, pod := range h.List(ctx, t) {
		held[pod.Name] = true
	}
	tried := map[string]string{}
	for _, ev := range list.Items {
		if held[ev.InvolvedObject.Name] && !strings.HasPrefix(ev.Message, HeldPrefix) {
			tried[ev.InvolvedObject.Name] = ev.Message
		}
	}
	if len(tried) > 0 {
		t.Errorf("kube-scheduler tried %d held pods, e.g. %v", len(tried), tried)
	}
}
