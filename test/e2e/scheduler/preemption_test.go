package scheduler

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/test/framework"
)

// Priority classes of the preemption scenarios.
const (
	lowPriority       = "e2e-low"
	highPriority      = "e2e-high"
	highNeverPreempts = "e2e-high-never"
	// protectedLabel marks the pods a PodDisruptionBudget protects.
	protectedLabel = "e2e.tessera.dev/protected"
)

// preemptionCase is a node full of low-priority slices and a pod that wants
// one more.
type preemptionCase struct {
	name string
	gpus []gpuSpec
	// high are pods of the preemptor's priority created first, which no
	// preemption may take; low are the pods that fill the node, created
	// in order after them.
	high, low []ctr
	// protected are the indexes of low pods a PodDisruptionBudget protects.
	protected []int
	// preemptor is the pod that does not fit, and its priority class.
	preemptor ctr
	class     string
	// victims is how many low pods must go; 0 means none may.
	victims int
	// reason is what the preemptor's FailedScheduling event says before
	// any preemption.
	reason string
	// why, when no pod may go, is what Tessera adds to that event.
	why string
}

func preemptionCases() []preemptionCase {
	t4s := func(shares int32) []gpuSpec {
		g := t4()
		g.shares = shares
		return []gpuSpec{g, g}
	}
	repeat := func(n int, c ctr) []ctr {
		out := make([]ctr, n)
		for i := range out {
			out[i] = c
		}
		return out
	}
	slice := func(memory, cores int64) ctr { return ctr{name: "main", count: 1, memory: memory, core: cores} }
	whole := ctr{name: "main", count: 1}
	return []preemptionCase{{
		name: "memory full: the fewest pods on one GPU go", gpus: t4s(10),
		low: repeat(6, slice(5120, 0)), preemptor: slice(10240, 0), class: highPriority, victims: 2,
		reason: "not enough memory",
	}, {
		name: "cores full", gpus: t4s(10),
		low: repeat(4, slice(1000, 50)), preemptor: slice(1000, 50), class: highPriority, victims: 1,
		reason: "not enough cores",
	}, {
		name: "shares full", gpus: t4s(2),
		low: repeat(4, slice(1000, 0)), preemptor: slice(1000, 0), class: highPriority, victims: 1,
		reason: "share limit reached",
	}, {
		name: "free memory split over GPUs: one GPU is freed", gpus: t4s(10),
		low: repeat(4, slice(5120, 0)), preemptor: slice(10240, 0), class: highPriority, victims: 1,
		reason: "not enough memory",
	}, {
		name: "a PDB-protected pod is spared when another will do", gpus: t4s(10),
		low: repeat(2, whole), protected: []int{1}, preemptor: whole, class: highPriority, victims: 1,
		reason: "not enough memory",
	}, {
		name: "preemptionPolicy Never never preempts", gpus: t4s(10),
		low: repeat(2, whole), preemptor: whole, class: highNeverPreempts,
		reason: "not enough memory", why: "GPU preemption: none, the pod's preemptionPolicy is Never",
	}, {
		name: "equal priority never preempts", gpus: t4s(10),
		low: repeat(2, whole), preemptor: whole, class: lowPriority,
		reason: "not enough memory", why: "1 node(s) had no lower-priority pods holding GPUs",
	}, {
		name: "no preemption where evicting every lower-priority pod still leaves no room", gpus: t4s(10),
		high: repeat(2, slice(10240, 0)), low: repeat(2, slice(5120, 0)), preemptor: slice(10240, 0), class: highPriority,
		reason: "not enough memory",
		why:    "evicting all 2 lower-priority GPU pods on node %s would not make room: without them the node had 0/2 GPUs that fit (2 not enough memory)",
	}}
}

// testPreemption runs the preemption cases, each on a node of its own.
func testPreemption(ctx context.Context, t *testing.T, e *env) {
	e.createPriorityClasses(ctx, t)
	for i, tc := range preemptionCases() {
		t.Run(tc.name, func(t *testing.T) { e.runPreemption(ctx, t, fmt.Sprintf("preempt-%d", i), tc) })
	}
}

// createPriorityClasses creates lowPriority, highPriority and
// highNeverPreempts.
func (e *env) createPriorityClasses(ctx context.Context, t *testing.T) {
	t.Helper()
	for _, pc := range []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: lowPriority}, Value: 100},
		{ObjectMeta: metav1.ObjectMeta{Name: highPriority}, Value: 1000},
		{ObjectMeta: metav1.ObjectMeta{Name: highNeverPreempts}, Value: 1000, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
	} {
		if _, err := e.cp.Kube.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
}

func (e *env) runPreemption(ctx context.Context, t *testing.T, group string, tc preemptionCase) {
	node := group + "-node"
	e.addNode(ctx, t, node, group, 10, tc.gpus...)
	gpuOf := map[string]string{}
	var high, low []string
	for i, c := range tc.high {
		name := fmt.Sprintf("%s-high-%d", group, i)
		pod := gpuPod(name, group, nil, c)
		pod.Spec.PriorityClassName = highPriority
		e.createPod(ctx, t, pod)
		e.waitBound(ctx, t, name)
		high = append(high, name)
	}
	// The budget comes before the pods it protects, so that kube-scheduler
	// has long heard of it when the preemptor comes, however loaded the
	// machine: no controller acts on it, and its status allows no
	// disruption.
	if len(tc.protected) > 0 {
		pdb := &policyv1.PodDisruptionBudget{
			ObjectMeta: metav1.ObjectMeta{Name: group, Namespace: namespace},
			Spec: policyv1.PodDisruptionBudgetSpec{
				MaxUnavailable: ptr.To(intstr.FromInt32(0)),
				Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{protectedLabel: group}},
			},
		}
		if _, err := e.cp.Kube.PolicyV1().PodDisruptionBudgets(namespace).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = e.cp.Kube.PolicyV1().PodDisruptionBudgets(namespace).Delete(context.Background(), group, metav1.DeleteOptions{})
		})
	}
	for i, c := range tc.low {
		name := fmt.Sprintf("%s-low-%d", group, i)
		pod := gpuPod(name, group, nil, c)
		pod.Spec.PriorityClassName = lowPriority
		if slices.Contains(tc.protected, i) {
			pod.Labels = map[string]string{protectedLabel: group}
		}
		e.createPod(ctx, t, pod)
		_, alloc := e.waitBound(ctx, t, name)
		gpuOf[name] = alloc.Spec.Containers[0].Devices[0].UUID
		low = append(low, name)
	}

	name := group + "-preemptor"
	pod := gpuPod(name, group, nil, tc.preemptor)
	pod.Spec.PriorityClassName = tc.class
	e.createPod(ctx, t, pod)
	var gone []string
	if tc.victims == 0 {
		e.waitFailedScheduling(ctx, t, name, tc.reason)
		why := tc.why
		if strings.Contains(why, "%s") {
			why = fmt.Sprintf(why, node)
		}
		e.waitFailedScheduling(ctx, t, name, why)
		// Give a wrong preemption time to happen: kube-scheduler retries
		// the pod and would evict at once.
		time.Sleep(3 * time.Second)
		if p, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, name, metav1.GetOptions{}); err != nil || p.Spec.NodeName != "" {
			t.Errorf("preemptor: err %v, bound to %q; want it pending", err, p.Spec.NodeName)
		}
	} else {
		_, alloc := e.waitBound(ctx, t, name)
		got := alloc.Spec.Containers[0].Devices[0].UUID
		gone = e.goneOf(ctx, t, low)
		if len(gone) != tc.victims {
			t.Errorf("evicted %v, want %d pods", gone, tc.victims)
		}
		for _, v := range gone {
			if gpuOf[v] != got {
				t.Errorf("evicted %s from %s; the preemptor got %s", v, gpuOf[v], got)
			}
		}
		for _, i := range tc.protected {
			if slices.Contains(gone, low[i]) {
				t.Errorf("evicted %s, which a PodDisruptionBudget protects, while another pod would do", low[i])
			}
		}
		t.Logf("evicted %v on %s for the preemptor", gone, got)
		e.waitPreemptingEvent(ctx, t, name, node, gone, alloc.Spec.Containers[0].Devices[0].Index)
	}
	if tc.victims == 0 {
		if gone = e.goneOf(ctx, t, low); len(gone) > 0 {
			t.Errorf("evicted %v; want none", gone)
		}
	}
	e.checkNoOvercommit(ctx, t)
	for _, n := range append(append(high, low...), name) {
		if !slices.Contains(gone, n) {
			e.deletePod(ctx, t, n)
		}
	}
}

// waitPreemptingEvent waits for the preemptor's one event naming the pods
// evicted for it on the node and the GPU that freed.
func (e *env) waitPreemptingEvent(ctx context.Context, t *testing.T, pod, node string, gone []string, gpu int32) {
	t.Helper()
	names := make([]string, len(gone))
	for i, g := range gone {
		names[i] = namespace + "/" + g
	}
	slices.Sort(names)
	want := fmt.Sprintf("%s: evicting %s on node %s frees GPU %d for the pod", preemption.ReasonPreempting, strings.Join(names, ", "), node, gpu)
	framework.WaitFor(t, 30*time.Second, "the event "+want, func() (bool, string) {
		events := e.events(ctx, pod)
		return strings.Count(events, preemption.ReasonPreempting+":") == 1 && strings.Contains(events, want), events
	})
}

// goneOf returns the pods among names that no longer exist or are being
// deleted.
func (e *env) goneOf(ctx context.Context, t *testing.T, names []string) []string {
	t.Helper()
	var gone []string
	for _, n := range names {
		p, err := e.cp.Kube.CoreV1().Pods(namespace).Get(ctx, n, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			gone = append(gone, n)
		case err != nil:
			t.Fatal(err)
		case p.DeletionTimestamp != nil:
			gone = append(gone, n)
		}
	}
	return gone
}
