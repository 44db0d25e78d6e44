package requeue

import (
	"cmp"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// OverQuota records that the pod, just turned away (Rejected), was turned
// away on some node by its namespace's GPU quota, as the namespace was at
// since; admits tells whether the quota has room now for what the pod
// asked beside taken, and what it asked. Such a pod is remembered past the
// window, until it is bound or deleted: kube-scheduler retries it on no
// event of its own when the quota gets room. When the quota may have got
// room after since, the pod is poked at once, since the filter that turned
// it away may not have seen that room.
func (r *Requeuer) OverQuota(pod *corev1.Pod, since time.Time, admits func(taken placement.Use) (placement.Use, bool)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rej, ok := r.rejected[pod.UID]
	if !ok {
		return
	}
	rej.admits = admits
	if freed, ok := r.quotaFreed[pod.Namespace]; ok && !freed.Before(since) {
		r.pokeNow(pod.UID, rej)
	}
}

// QuotaFreed pokes the pods the namespace's GPU quota turned away that
// it has room for now, oldest turned away first, each taking the room it
// asked for, so that one pod's worth of room freed pokes about one pod.
// A pod poked and not yet turned away again takes its room but is not
// poked again.
func (r *Requeuer) QuotaFreed(namespace string) {
	now := r.clock.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.quotaFreed[namespace] = now
	type waiting struct {
		uid types.UID
		rej *rejection
	}
	var ws []waiting
	for uid, rej := range r.rejected {
		if rej.admits != nil && rej.namespace == namespace {
			ws = append(ws, waiting{uid, rej})
		}
	}
	slices.SortFunc(ws, func(a, b waiting) int {
		return cmp.Or(a.rej.at.Compare(b.rej.at), cmp.Compare(a.rej.name, b.rej.name))
	})
	var taken placement.Use
	for _, w := range ws {
		asked, ok := w.rej.admits(taken)
		if !ok {
			continue
		}
		taken = taken.Add(asked)
		// One poked and not turned away since is on its way already.
		if w.rej.at.After(w.rej.poked) {
			r.pokeNow(w.uid, w.rej)
		}
	}
}

// pokeNow queues a poke for the pod. It runs under r.mu.
func (r *Requeuer) pokeNow(uid types.UID, rej *rejection) {
	rej.poked = r.clock.Now()
	r.queue.Add(uid)
}
