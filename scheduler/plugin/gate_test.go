package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// gatedPod is a pod of the plugin's profile asking for one GPU with
// memoryMiB, created at second created.
func gatedPod(name string, memoryMiB int64, created int64) *v1.Pod {
	pod := gpuPod(name, memoryMiB)
	pod.Spec.SchedulerName = "tessera-scheduler"
	pod.CreationTimestamp = metav1.NewTime(time.Unix(created, 0))
	return pod
}

// fillBoth leaves 5120 MiB free on each of node-1's two GPUs.
func fillBoth(v *view.View) {
	allocationOn(v, gpuPod("fill-0", 10240), node, "GPU-0", 10240)
	allocationOn(v, gpuPod("fill-1", 10240), node, "GPU-1", 10240)
}

func TestGate(t *testing.T) {
	const short = "held by Tessera until GPUs free up: no GPU has 10000 MiB free; the largest free is 5120 MiB on node-1"
	tests := []struct {
		name   string
		full   bool
		change func(p *Plugin, pod *v1.Pod)
		want   string // the reason the pod is held; "" when it passes
	}{
		{name: "a pod some GPU has room for passes"},
		{name: "a pod no GPU has room for now is held", full: true, want: short},
		{name: "a pod without GPUs passes", full: true, change: func(_ *Plugin, pod *v1.Pod) {
			pod.Spec.Containers[0].Resources.Limits = nil
		}},
		{name: "an invalid request passes", full: true, change: func(_ *Plugin, pod *v1.Pod) {
			pod.Spec.Containers[0].Resources.Limits[gpurequest.DefaultResourceNames().MemoryPercentage] = resource.MustParse("50")
		}},
		{name: "a pod no GPU could ever hold passes", full: true, change: func(_ *Plugin, pod *v1.Pod) {
			pod.Spec.Containers[0].Resources.Limits[gpurequest.DefaultResourceNames().Memory] = resource.MustParse("20000")
		}},
		{name: "a nominated pod passes", full: true, change: func(_ *Plugin, pod *v1.Pod) { pod.Status.NominatedNodeName = node }},
		{name: "a gang's pod passes", full: true, change: func(_ *Plugin, pod *v1.Pod) {
			pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("gang")}
		}},
		{name: "a pod of a gang with held room passes", full: true, change: func(_ *Plugin, pod *v1.Pod) {
			pod.Annotations = map[string]string{gpuv1alpha1.GangHoldAnnotation: "default/gang"}
		}},
		{name: "another profile's pod passes", full: true, change: func(_ *Plugin, pod *v1.Pod) { pod.Spec.SchedulerName = "default-scheduler" }},
		{name: "a pod that could preempt a lower-priority pod passes", full: true, change: func(p *Plugin, pod *v1.Pod) {
			bindLowPriority(p)
			pod.Spec.Priority = ptr.To[int32](10)
		}},
		{name: "a pod that may not preempt is held", full: true, want: short, change: func(p *Plugin, pod *v1.Pod) {
			bindLowPriority(p)
			pod.Spec.Priority = ptr.To[int32](10)
			pod.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
		}},
		{name: "a pod of the bound pods' priority is held", full: true, want: short, change: func(p *Plugin, _ *v1.Pod) { bindLowPriority(p) }},
		{name: "a pod holding GPUs passes", full: true, change: func(p *Plugin, pod *v1.Pod) {
			allocationOn(p.view, pod, node, "GPU-0", 1000)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, v, _ := newTestPlugin(t)
			if tc.full {
				fillBoth(v)
			}
			pod := gatedPod("pod", 10000, 0)
			if tc.change != nil {
				tc.change(p, pod)
			}
			status := p.gate(pod)
			if got := status.Message(); got != tc.want {
				t.Errorf("gate says %q, want %q", got, tc.want)
			}
		})
	}
}

// bindLowPriority has the plugin see a bound pod of priority 0.
func bindLowPriority(p *Plugin) {
	bound := gpuPod("bound", 1000)
	bound.Spec.NodeName = node
	p.Priorities.Handler().OnAdd(bound, true)
}

// TestGateReleasesWhoCouldPreemptAPodBoundBelowThem holds pods of
// priority 10, one of which may not preempt, while no lower-priority pod
// is bound; binding one releases the pod that may preempt it, which the
// gate then lets by, and leaves the other held.
func TestGateReleasesWhoCouldPreemptAPodBoundBelowThem(t *testing.T) {
	p, v, act := newTestPlugin(t)
	fillBoth(v)
	preempts, never := gatedPod("preempts", 10000, 0), gatedPod("never", 10000, 1)
	for _, pod := range []*v1.Pod{preempts, never} {
		pod.Spec.Priority = ptr.To[int32](10)
	}
	never.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
	for _, pod := range []*v1.Pod{preempts, never} {
		if status := p.gate(pod); status.IsSuccess() {
			t.Fatalf("%s passes with no lower-priority pod bound", pod.Name)
		}
	}
	bindLowPriority(p)
	if !slices.Equal(act.pods, []string{"default/preempts"}) {
		t.Errorf("activated %v, want [default/preempts]", act.pods)
	}
	if _, held := p.requeue.Holds(never.UID); !held {
		t.Error("the pod that may not preempt is no longer held")
	}
	if status := p.gate(preempts); !status.IsSuccess() {
		t.Errorf("the pod that may preempt is held again: %s", status.Message())
	}
}

// TestGateReleasesInQueueOrder holds pods, frees one GPU and checks that
// exactly the first pod in queue order that the GPU holds is released,
// and that the gate then lets it by.
func TestGateReleasesInQueueOrder(t *testing.T) {
	p, v, act := newTestPlugin(t)
	fillBoth(v)
	var held []*v1.Pod
	for i := range 4 {
		held = append(held, gatedPod("held-"+string(rune('a'+i)), 10000, int64(i)))
	}
	high := gatedPod("high", 10000, 10)
	high.Spec.Priority = ptr.To[int32](10)
	high.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
	held = append(held, high)
	holdAndFreeGPU0(t, p, v, act, held, high)
	if status := p.gate(high); !status.IsSuccess() {
		t.Fatalf("the released pod is held again: %s", status.Message())
	}
	allocationOn(v, high, node, "GPU-0", 10000)
	if status := p.gate(held[0]); status.IsSuccess() {
		t.Error("once the released pod took the room, the next pod passes too")
	}
}

// TestGateHoldsANewcomerBehindHeldPods frees a GPU that holds one of the
// held pods: a pod that comes after them and would fit the same room is
// held behind the pod released for it, told why, while a smaller pod
// that fits beside it passes.
func TestGateHoldsANewcomerBehindHeldPods(t *testing.T) {
	p, v, act := newTestPlugin(t)
	fillBoth(v)
	first, second := gatedPod("first", 10000, 0), gatedPod("second", 10000, 1)
	holdAndFreeGPU0(t, p, v, act, []*v1.Pod{first, second}, first)
	late := gatedPod("late", 10000, 5)
	if got, want := p.gate(late).Message(), waiters.HeldPrefix+waiters.Promised; got != want {
		t.Fatalf("a pod after the held ones, for the room released to the first, is told %q, want %q", got, want)
	}
	if status := p.gate(gatedPod("small", 5000, 6)); !status.IsSuccess() {
		t.Fatalf("a pod that fits beside the released one is held: %s", status.Message())
	}
	if status := p.gate(first); !status.IsSuccess() {
		t.Fatalf("the released pod is held: %s", status.Message())
	}
}

// holdAndFreeGPU0 has the gate hold the pods on node-1, full, frees
// GPU-0 and checks that the free released exactly the pod released.
func holdAndFreeGPU0(t *testing.T, p *Plugin, v *view.View, act *activations, held []*v1.Pod, released *v1.Pod) {
	t.Helper()
	for _, pod := range held {
		if p.gate(pod).IsSuccess() {
			t.Fatalf("pod %s passed the gate on a full node", pod.Name)
		}
	}
	v.Release("fill-0")
	p.requeue.Freed(node)
	if got, want := act.take(), keys([]*v1.Pod{released}); !slices.Equal(got, want) {
		t.Fatalf("the free released %v, want %v", got, want)
	}
}

// TestGateLetsByAPodAFreeChoseWhileJudged holds a pod, frees GPU-0 in
// the view and tells the requeuer of it only while the gate judges the
// pod again, after it asked the index and before it holds the pod, as
// DRA mode's feed does when it waits for kube-scheduler's claim tracker:
// the free's play chooses the pod, and the gate lets it by rather than
// hold it again. Held, it would wait for the next free: its activation
// reaches kube-scheduler before the hold, or the screen hides the pod
// after it.
func TestGateLetsByAPodAFreeChoseWhileJudged(t *testing.T) {
	p, v, act := newTestPlugin(t)
	fillBoth(v)
	pod := gatedPod("pod", 10000, 0)
	req, err := p.parser.Parse(pod)
	if err != nil {
		t.Fatal(err)
	}
	if p.gate(pod).IsSuccess() {
		t.Fatal("the pod passed the gate on a full node")
	}
	v.Release("fill-0")
	// The gate reads the pod's quota after it asked the index.
	rules := p.rules
	rules.Quotas = &quotaRead{func() { p.requeue.Freed(node) }}
	if held, why := p.Judge(pod, req.Request, rules, v); held {
		t.Fatalf("the pod the free chose is held: %s", why)
	}
	if _, held := p.requeue.Holds(pod.UID); held {
		t.Error("the requeuer holds the pod the free chose")
	}
	if got, want := act.take(), keys([]*v1.Pod{pod}); !slices.Equal(got, want) {
		t.Errorf("the free released %v, want %v", got, want)
	}
	if status := p.gate(pod); !status.IsSuccess() {
		t.Errorf("the pod is held when kube-scheduler meets it again: %s", status.Message())
	}
}

// quotaRead is a source of no GPU quota that calls read, once, when the
// first quota is read.
type quotaRead struct{ read func() }

func (q *quotaRead) Limits(string) quota.Limits {
	if read := q.read; read != nil {
		q.read = nil
		read()
	}
	return quota.Limits{}
}

// TestAdoptReleasesParkedPodsInQueueOrder has a new leader judge parked
// pods, newest first, while a GPU is free for one of them: the oldest
// takes it, whatever the order they were judged in, and the rest stay
// held.
func TestAdoptReleasesParkedPodsInQueueOrder(t *testing.T) {
	p, v, act := newTestPlugin(t)
	fillBoth(v)
	v.Release("fill-0")
	p.requeue.Index().Freed(node)
	var parked []*v1.Pod
	for i := range 4 {
		parked = append(parked, gatedPod("parked-"+string(rune('a'+i)), 10000, int64(i)))
	}
	slices.Reverse(parked)
	p.requeue.Adopt(parked, func(pod *v1.Pod) { p.gate(pod) })
	if got, want := act.take(), []string{"default/parked-a"}; !slices.Equal(got, want) {
		t.Errorf("adopting released %v, want %v", got, want)
	}
	for _, pod := range parked[:3] {
		if _, held := p.requeue.Holds(pod.UID); !held {
			t.Errorf("%s is not held", pod.Name)
		}
	}
	if status := p.gate(parked[3]); !status.IsSuccess() {
		t.Errorf("the released pod is held again: %s", status.Message())
	}
}

// TestGateTellsOnce checks that a pod held again for the same reason is
// not told again, and is when the reason changes.
func TestGateTellsOnce(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	fillBoth(v)
	pod := gatedPod("pod", 10000, 0)
	p.gate(pod)
	p.gate(pod)
	reasons := p.Reasons.(*told)
	if n := len(reasons.of(pod.UID)); n != 1 {
		t.Fatalf("held twice for one reason, told %d times, want 1", n)
	}
	allocationOn(v, gpuPod("more", 1000), node, "GPU-0", 1000)
	allocationOn(v, gpuPod("more-1", 1000), node, "GPU-1", 1000)
	p.clock.(interface{ SetTime(time.Time) }).SetTime(p.clock.Now().Add(2 * time.Second))
	p.gate(pod)
	whys := reasons.of(pod.UID)
	if n := len(whys); n != 2 {
		t.Fatalf("held for a new reason, told %d times in all, want 2", n)
	}
	if why := whys[1]; !strings.Contains(why, "the largest free is 4120 MiB") {
		t.Errorf("the pod is told %q", why)
	}
}

// TestGateWaitsForSync checks that pods that come before the view has
// synced are held, and handed back together once it has.
func TestGateWaitsForSync(t *testing.T) {
	p, _, _ := newTestPlugin(t)
	synced := false
	p.ready = func() bool { return synced }
	pod := gatedPod("early", 1000, 0)
	if got := p.gate(pod).Message(); got != waiters.NotSynced {
		t.Fatalf("before the sync the gate says %q, want %q", got, waiters.NotSynced)
	}
	synced = true
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if got := p.Unsynced.Run(ctx); len(got) != 1 || got[0] != pod {
		t.Fatalf("after the sync the pods judged are %v", got)
	}
	if status := p.gate(pod); !status.IsSuccess() {
		t.Errorf("after the sync a pod that fits is held: %s", status.Message())
	}
}

// TestPodsThatWaitedForSyncAreJudgedTogether has pods come in no order
// before the view syncs while a GPU is free for one of them: once it
// syncs they are judged together, and the free goes to the oldest alone,
// with no pod activated while they are judged but the pods judged.
func TestPodsThatWaitedForSyncAreJudgedTogether(t *testing.T) {
	p, v, act := newTestPlugin(t)
	act.gate = p.gate
	fillBoth(v)
	v.Release("fill-0")
	synced := false
	p.ready = func() bool { return synced }
	var pods []*v1.Pod
	for _, i := range []int{2, 0, 3, 1} {
		pod := gatedPod("early-"+string(rune('a'+i)), 10000, int64(i))
		if got := p.gate(pod).Message(); got != waiters.NotSynced {
			t.Fatalf("before the sync the gate says %q, want %q", got, waiters.NotSynced)
		}
		pods = append(pods, pod)
	}
	synced = true
	p.requeue.Index().Freed(node)
	p.requeue.JudgeWaited(t.Context(), p.Unsynced, "GPU view", p.Reasons)
	want := slices.Sorted(slices.Values(append(keys(pods), "default/early-a")))
	if got := act.take(); !slices.Equal(got, want) {
		t.Errorf("activated %v, want the pods judged and then default/early-a alone: %v", got, want)
	}
	for _, pod := range pods {
		_, held := p.requeue.Holds(pod.UID)
		if held != (pod.Name != "early-a") {
			t.Errorf("%s held: %v", pod.Name, held)
		}
		// Held while they were judged, the pods were told nothing: those
		// held still are told that the room went to a pod ahead of them.
		whys := p.Reasons.(*told).of(pod.UID)
		if told := len(whys) > 0; told != held || told && (len(whys) != 1 || whys[0] != waiters.HeldPrefix+waiters.Promised) {
			t.Errorf("%s (held %v) is told %q", pod.Name, held, whys)
		}
	}
}
