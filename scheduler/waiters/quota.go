package waiters

import (
	"maps"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// OverQuota records that the pod's namespace's GPU quota turned it away,
// as the namespace was at since, where it asked for asked at the least:
// the Queue activates it when the namespace frees GPUs or its quota is
// raised, and the quota then has room for that. When the quota may have
// got room after since, the pod is activated at once, since its cycle may
// not have seen that room (kube-scheduler retries a pod activated during
// its cycle once the cycle ends).
func (r *Queue) OverQuota(pod *v1.Pod, since time.Time, asked placement.Use) {
	r.mu.Lock()
	w, ok := r.pods[pod.UID]
	var chosen []*v1.Pod
	if ok {
		r.setQuotaAsked(w, &asked)
		if freed, ok := r.quotaFreed[pod.Namespace]; ok && !freed.Before(since) {
			chosen = append(chosen, w.pod)
		}
	}
	r.mu.Unlock()
	r.activate("Retrying a pod its namespace's GPU quota may have room for", chosen)
}

// QuotaFreed activates the waiting pods that the namespace's GPU quota
// turned away and has room for now, in queue order, each taking the room
// it asked for, so that one pod's worth of room activates about one pod.
// A pod activated to take room on a node takes its room but is not
// activated again.
func (r *Queue) QuotaFreed(namespace string) {
	r.mu.Lock()
	r.quotaFreed[namespace] = r.clock.Now()
	limits := r.rules.Limits(namespace)
	used := r.view.Used(namespace)
	waiting := slices.Collect(maps.Values(r.quotaWaiters[namespace]))
	slices.SortFunc(waiting, func(a, b *waiter) int {
		switch {
		case before(a, b):
			return -1
		case before(b, a):
			return 1
		}
		return 0
	})
	var chosen []*v1.Pod
	for _, w := range waiting {
		if limits.Exceeded(namespace, used, *w.quotaAsked) != "" {
			continue
		}
		used = used.Add(*w.quotaAsked)
		// One activated to take room on a node is on its way already.
		if w.heldOn == "" {
			chosen = append(chosen, w.pod)
		}
	}
	r.mu.Unlock()
	r.activate("GPU quota freed; retrying pods", chosen, "namespace", namespace)
}

// setQuotaAsked sets what the waiter last asked of its namespace's GPU
// quota when the quota turned it away, nil when it did not, and files it
// among its namespace's waiters on the quota. It runs under r.mu.
func (r *Queue) setQuotaAsked(w *waiter, asked *placement.Use) {
	w.quotaAsked = asked
	ns, uid := w.pod.Namespace, w.pod.UID
	if asked != nil {
		if r.quotaWaiters[ns] == nil {
			r.quotaWaiters[ns] = map[types.UID]*waiter{}
		}
		r.quotaWaiters[ns][uid] = w
		return
	}
	if waiters, ok := r.quotaWaiters[ns]; ok {
		delete(waiters, uid)
		if len(waiters) == 0 {
			delete(r.quotaWaiters, ns)
		}
	}
}

// quotaRoom reports whether the namespace's GPU quota has room for the
// waiter given assignment on node, beside what the pods chosen before it
// in the same play take (taken, by namespace, which it adds to when
// there is room).
func (r *Queue) quotaRoom(w *waiter, assignment []gpuv1alpha1.ContainerAllocation, node *placement.Node, taken map[string]placement.Use) bool {
	ns := w.pod.Namespace
	limits := r.rules.Limits(ns)
	if !limits.Enforced() {
		return true
	}
	asked := placement.UseOf(assignment, node)
	if limits.Exceeded(ns, r.view.Used(ns).Add(taken[ns]), asked) != "" {
		return false
	}
	taken[ns] = taken[ns].Add(asked)
	return true
}
