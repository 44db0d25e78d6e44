package plugin

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// addNode adds a node with count GPUs of memoryMiB each, its heartbeat fresh.
func addNode(p *Plugin, v *view.View, name string, count int, memoryMiB int64) {
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i := range count {
		gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
			UUID: fmt.Sprintf("%s-GPU-%d", name, i), Index: int32(i), Model: "H100", MemoryMiB: memoryMiB, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
		})
	}
	v.SetGPUNode(gn)
	v.SetLease(name, p.clock.Now())
}

// allocationOn records in the view that the pod holds memoryMiB on a GPU of
// a node, and returns the allocation.
func allocationOn(v *view.View, pod *v1.Pod, nodeName, uuid string, memoryMiB int64) *gpuv1alpha1.GPUAllocation {
	a := &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: types.UID("alloc-" + pod.Name)},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: pod.UID, NodeName: nodeName, Containers: []gpuv1alpha1.ContainerAllocation{{
			Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: uuid, MemoryMiB: memoryMiB}},
		}}},
	}
	v.Place(a)
	return a
}

// failOnce has the pod wait, as after a cycle that failed.
func failOnce(t testing.TB, p *Plugin, pod *v1.Pod) {
	t.Helper()
	req, err := p.parser.Parse(pod)
	if err != nil {
		t.Fatal(err)
	}
	p.requeue.Waiting(pod, req.Request)
	p.requeue.Failed(pod.UID)
}

// waitFor has count pods of memoryMiB wait, as after a cycle that failed,
// each created a second after the one before; it returns them in queue order.
func waitFor(t testing.TB, p *Plugin, prefix string, count int, memoryMiB int64) []*v1.Pod {
	t.Helper()
	var pods []*v1.Pod
	for i := range count {
		pod := gpuPod(fmt.Sprintf("%s-%04d", prefix, i), memoryMiB)
		pod.CreationTimestamp = metav1.NewTime(time.Unix(int64(i), 0))
		failOnce(t, p, pod)
		pods = append(pods, pod)
	}
	return pods
}

func keys(pods []*v1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	slices.Sort(out)
	return out
}

func (a *activations) take() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := a.pods
	a.pods = nil
	slices.Sort(out)
	return out
}

// TestFreedActivatesWhatFits checks that GPUs freed on a node activate only
// the waiting pods the node could then hold, first in queue order.
func TestFreedActivatesWhatFits(t *testing.T) {
	tests := []struct {
		name    string
		usedMiB int64 // what stays held on the node's one 80 GiB GPU
		want    int   // how many of the first waiting pods are activated
	}{
		{name: "a freed 10 GiB slice serves no pod of 40 GiB", usedMiB: 71680, want: 0},
		{name: "a freed 80 GiB GPU serves two pods of 40 GiB", usedMiB: 0, want: 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, v, act := newTestPlugin(t)
			addNode(p, v, "big", 1, 81920)
			if tc.usedMiB > 0 {
				allocationOn(v, gpuPod("stays", tc.usedMiB), "big", "big-GPU-0", tc.usedMiB)
			}
			waiting := waitFor(t, p, "w", 1000, 40960)
			act.take()
			p.requeue.Freed("big")
			if got, want := act.take(), keys(waiting[:tc.want]); !slices.Equal(got, want) {
				t.Errorf("activated %d pods %v, want %v", len(got), got, want)
			}
		})
	}
}

// TestFreedQueueOrder checks that a higher-priority pod takes the freed room
// before older pods, and that pods asking for more than any GPU has free are
// passed by for smaller ones behind them.
func TestFreedQueueOrder(t *testing.T) {
	p, v, act := newTestPlugin(t)
	addNode(p, v, "big", 1, 81920)
	allocationOn(v, gpuPod("stays", 40960), "big", "big-GPU-0", 40960)
	old := waitFor(t, p, "old", 2, 20480)
	large := waitFor(t, p, "large", 3, 61440)
	high := gpuPod("high", 30720)
	priority := int32(10)
	high.Spec.Priority = &priority
	failOnce(t, p, high)
	act.take()

	p.requeue.Freed("big")
	// 40 GiB free: high takes 30 GiB, then neither old pod fits in 10 GiB.
	if got, want := act.take(), keys([]*v1.Pod{high}); !slices.Equal(got, want) {
		t.Errorf("activated %v, want %v (large: %v, old: %v)", got, want, keys(large), keys(old))
	}
}

// TestActivatedPodPlacedElsewhere checks that the room a pod was activated
// for goes to the next waiting pod when the pod is placed on another node,
// or its cycle fails.
func TestActivatedPodPlacedElsewhere(t *testing.T) {
	for _, outcome := range []string{"placed elsewhere", "failed"} {
		t.Run(outcome, func(t *testing.T) {
			p, v, act := newTestPlugin(t)
			addNode(p, v, "big", 1, 81920)
			waiting := waitFor(t, p, "w", 3, 40960)
			act.take()
			p.requeue.Freed("big")
			if got, want := act.take(), keys(waiting[:2]); !slices.Equal(got, want) {
				t.Fatalf("activated %v, want %v", got, want)
			}
			req, _ := p.parser.Parse(waiting[0])
			p.requeue.Waiting(waiting[0], req.Request)
			if outcome == "failed" {
				p.requeue.Failed(waiting[0].UID)
			} else {
				p.requeue.Placed(waiting[0].UID, node)
			}
			// The second pod takes its room again; the third the room
			// the first left.
			got := act.take()
			if want := keys(waiting[1:]); !slices.Equal(got, want) {
				t.Errorf("after the first pod's cycle activated %v, want %v", got, want)
			}
		})
	}
}

// TestHintsQueueWhatFits checks that a Node added queues a waiting pod
// only when the node, as the view holds it, has room for it, and a pod the
// plugin does not know always; and that of the events that free GPUs only
// an assigned pod deleted is registered: the tracker reports the others.
func TestHintsQueueWhatFits(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	addNode(p, v, "big", 1, 81920)
	allocationOn(v, gpuPod("other", 51200), "big", "big-GPU-0", 51200)
	waiting := waitFor(t, p, "w", 2, 20480)
	hints := func(added *v1.Node) []fwk.QueueingHint {
		var out []fwk.QueueingHint
		for _, pod := range append(waiting, gpuPod("unknown", 20480)) {
			h, err := p.nodeAdded(klog.Background(), pod, nil, added)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, h)
		}
		return out
	}
	// 30 GiB free: the first 20 GiB pod fits, the second no longer.
	if got, want := hints(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "big"}}), []fwk.QueueingHint{fwk.Queue, fwk.QueueSkip, fwk.Queue}; !slices.Equal(got, want) {
		t.Errorf("node big added: hints %v, want %v", got, want)
	}
	// A node without a GPUNode holds no GPU pod.
	if got, want := hints(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "cpu-only"}}), []fwk.QueueingHint{fwk.QueueSkip, fwk.QueueSkip, fwk.Queue}; !slices.Equal(got, want) {
		t.Errorf("node cpu-only added: hints %v, want %v", got, want)
	}

	events, err := p.EventsToRegister(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var got []fwk.ClusterEvent
	for _, e := range events {
		got = append(got, e.Event)
	}
	want := []fwk.ClusterEvent{{Resource: fwk.Node, ActionType: fwk.Add}, {Resource: fwk.AssignedPod, ActionType: fwk.Delete}}
	if !slices.Equal(got, want) {
		t.Errorf("the plugin registers %v, want %v: kube-scheduler would walk every unschedulable pod on each other event", got, want)
	}
}

// TestDeletedPodQueuesWhatItFreed checks that a deleted assigned pod queues
// the waiting pod its GPUs serve, once the view has freed them, and only
// then. A preemptor whose victim the tracker saw deleted first was
// activated while DefaultPreemption still held it back, so this event,
// from kube-scheduler's own informer, is its only way back: before the
// plugin registered it, TestPlugin/preemption gave up on such a pod after
// 60 s in a fresh-clone run.
func TestDeletedPodQueuesWhatItFreed(t *testing.T) {
	p, v, act := newTestPlugin(t)
	addNode(p, v, "big", 1, 81920)
	addNode(p, v, "other", 1, 81920)
	victim := gpuPod("victim", 81920)
	victim.Spec.NodeName = "big"
	allocationOn(v, victim, "big", "big-GPU-0", 81920)
	allocationOn(v, gpuPod("stays", 81920), "other", "other-GPU-0", 81920)
	preemptor := waitFor(t, p, "preemptor", 1, 40960)[0]
	hint := func(deleted *v1.Pod) fwk.QueueingHint {
		t.Helper()
		h, err := p.assignedPodDeleted(klog.Background(), preemptor, deleted, nil)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	// kube-scheduler's informer saw the deletion before the tracker's.
	if got := hint(victim); got != fwk.QueueSkip {
		t.Errorf("victim deleted, its GPU still held in the view: hint %v, want %v", got, fwk.QueueSkip)
	}
	// The tracker frees the GPU and activates the preemptor, which
	// DefaultPreemption may still hold back; kube-scheduler asks again on
	// its own event.
	v.Release(victim.UID)
	p.requeue.Freed("big")
	if got, want := act.take(), keys([]*v1.Pod{preemptor}); !slices.Equal(got, want) {
		t.Errorf("GPU freed: activated %v, want %v", got, want)
	}
	again := victim.DeepCopy()
	if got := hint(again); got != fwk.Queue {
		t.Errorf("victim deleted, its GPU freed in the view: hint %v, want %v", got, fwk.Queue)
	}
	// A pod deleted elsewhere frees nothing the preemptor could take.
	elsewhere := gpuPod("elsewhere", 1024)
	elsewhere.Spec.NodeName = "other"
	if got := hint(elsewhere); got != fwk.QueueSkip {
		t.Errorf("a pod deleted on a full node: hint %v, want %v", got, fwk.QueueSkip)
	}
}

// BenchmarkHintsPerEvent measures what one added Node costs the queueing
// hints when 10,000 pods wait: kube-scheduler asks about the event once for
// each of them.
func BenchmarkHintsPerEvent(b *testing.B) {
	p, v, _ := newTestPlugin(b)
	addNode(p, v, "big", 8, 81920)
	waiting := waitFor(b, p, "w", 10000, 40960)
	for b.Loop() {
		added := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "big"}}
		for _, pod := range waiting {
			if _, err := p.nodeAdded(klog.Background(), pod, nil, added); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestWaiterChangingShape has a waiting pod ask for another shape, and
// then for its first again: a free plays it by what it asks now, and
// once, however often it moved.
func TestWaiterChangingShape(t *testing.T) {
	tests := []struct {
		name string
		asks []int64 // the pod's asks in turn, of the node's 80 GiB GPU
		free int64   // what the free leaves free of it
		want []string
	}{
		{name: "a pod that now asks for more than the room is not played by what it asked before",
			asks: []int64{40960, 61440}, free: 40960, want: []string{"default/other-0000"}},
		{name: "a pod back to its first shape takes its room once",
			asks: []int64{40960, 61440, 40960}, free: 81920, want: []string{"default/mover", "default/other-0000"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, v, act := newTestPlugin(t)
			addNode(p, v, "big", 1, 81920)
			if stays := 81920 - tc.free; stays > 0 {
				allocationOn(v, gpuPod("stays", stays), "big", "big-GPU-0", stays)
			}
			allocationOn(v, gpuPod("ends", tc.free), "big", "big-GPU-0", tc.free)
			// Pods of its first shape wait already, so that the shape
			// stays with the mover's entry in it.
			waitFor(t, p, "other", 2, 40960)
			mover := gpuPod("mover", 0)
			mover.CreationTimestamp = metav1.NewTime(time.Unix(-1, 0))
			for _, memory := range tc.asks {
				mover.Spec.Containers[0].Resources.Limits[gpurequest.DefaultResourceNames().Memory] = *resource.NewQuantity(memory, resource.DecimalSI)
				failOnce(t, p, mover)
			}
			act.take()
			v.Release("ends")
			p.requeue.Freed("big")
			if got := act.take(); !slices.Equal(got, tc.want) {
				t.Errorf("activated %v, want %v", got, tc.want)
			}
		})
	}
}
