package plugin

import (
	"container/heap"

	v1 "k8s.io/api/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// lastFirst orders the pods to park: the pod last in kube-scheduler's
// queue order (lowest priority, then youngest) is parked first. Frees
// release held pods from the head of that order. A pod released while
// only hidden by the screen costs no write, but a parked one waits for
// its unpark, a write and a watch event through the API server, before
// kube-scheduler meets it. So the pods that will wait longest are parked
// first and the head, which the next frees release, last: at a first
// start over a backlog, parking takes minutes, and parked head first,
// every release in those minutes waited for its unpark.
//
// It is a workqueue.Queue: the workqueue calls it under its own lock.
type lastFirst struct {
	pods    corelisters.PodLister
	entries parkEntries
}

var _ workqueue.Queue[cache.ObjectName] = (*lastFirst)(nil)

// parkEntry is a pod to park and what orders it, read when it was
// queued; pod is nil for a pod gone, which is synced first.
type parkEntry struct {
	key      cache.ObjectName
	pod      *v1.Pod
	priority int32
}

func newLastFirst(pods corelisters.PodLister) *lastFirst {
	return &lastFirst{pods: pods}
}

// Touch leaves a pod queued again where it is.
func (q *lastFirst) Touch(cache.ObjectName) {}

// Push queues the pod.
func (q *lastFirst) Push(key cache.ObjectName) {
	e := parkEntry{key: key}
	if pod, err := q.pods.Pods(key.Namespace).Get(key.Name); err == nil {
		e.pod, e.priority = pod, preemption.Priority(pod)
	}
	heap.Push(&q.entries, e)
}

// Len returns how many pods are queued.
func (q *lastFirst) Len() int { return len(q.entries) }

// Pop takes out the pod to park next.
func (q *lastFirst) Pop() cache.ObjectName {
	return heap.Pop(&q.entries).(parkEntry).key
}

// parkEntries is a heap whose top is the entry last in queue order.
type parkEntries []parkEntry

func (h parkEntries) Len() int { return len(h) }

func (h parkEntries) Less(i, j int) bool {
	a, b := h[i], h[j]
	if a.pod == nil || b.pod == nil {
		return a.pod == nil && b.pod != nil
	}
	return waiters.QueueOrder(a.pod, a.priority, b.pod, b.priority) > 0
}

func (h parkEntries) Swap(i, j int) { h[i], h[j] = h[j], h[i] }

func (h *parkEntries) Push(x any) { *h = append(*h, x.(parkEntry)) }

func (h *parkEntries) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = parkEntry{}
	*h = old[:len(old)-1]
	return e
}
