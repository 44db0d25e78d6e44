package gatelift

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/internal/periodic"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// cycleTimeout is how long the room a released pod was released for
// stays its own while neither this extender nor the API tells that its
// cycle ended, as while kube-scheduler is down; the room then goes to the
// pods behind it.
const cycleTimeout = 30 * time.Second

// Started tells the lifter that a scheduling cycle of the pod reached the
// extender's filter, asking for req.
func (l *Lifter) Started(pod *corev1.Pod, req *placement.Request) {
	if known, _ := l.queue.Holds(pod.UID); !known {
		return
	}
	l.queue.Waiting(pod, req)
	l.mu.Lock()
	l.cycles[pod.UID] = l.cfg.Clock.Now()
	l.mu.Unlock()
}

// Ended tells the lifter that the pod's cycle bound it to node, or, with
// node "", placed it nowhere. A pod placed nowhere is not gated any
// more: it waits in kube-scheduler's queue, and the room it was released
// for goes to the pods behind it.
func (l *Lifter) Ended(uid types.UID, node string) {
	l.mu.Lock()
	delete(l.cycles, uid)
	l.mu.Unlock()
	if node != "" {
		l.queue.Placed(uid, node)
		return
	}
	l.queue.Failed(uid)
	l.queue.Forget(uid)
}

// Claimed returns what the pods other than except, of priority at least
// priority, released for room on the node are to take there, for the
// extender's filter to count as taken (waiters.Queue.Claimed).
func (l *Lifter) Claimed(node string, except types.UID, priority int32) []placement.Hold {
	return l.queue.Claimed(node, except, priority)
}

// inCycle reports whether the pod is one the lifter released whose
// cycle has not ended.
func (l *Lifter) inCycle(uid types.UID) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.cycles[uid]
	return ok
}

// expire gives the room of released pods whose cycle has not ended after
// cycleTimeout to the pods behind them, until ctx ends.
func (l *Lifter) expire(ctx context.Context) {
	periodic.Every(ctx, l.cfg.Clock, cycleTimeout/4, func() {
		var expired []types.UID
		now := l.cfg.Clock.Now()
		l.mu.Lock()
		for uid, since := range l.cycles {
			if now.Sub(since) >= cycleTimeout {
				expired = append(expired, uid)
				delete(l.cycles, uid)
			}
		}
		l.mu.Unlock()
		for _, uid := range expired {
			l.queue.Forget(uid)
		}
	})
}

// Freed releases the gated pods that the node, as the view holds it now,
// could serve.
func (l *Lifter) Freed(node string) { l.queue.Freed(node) }

// Forget drops a pod that is gone, and releases the pods that the room
// it was released for could serve.
func (l *Lifter) Forget(uid types.UID) {
	l.mu.Lock()
	delete(l.cycles, uid)
	l.mu.Unlock()
	l.queue.Forget(uid)
}

// QuotaFreed releases the gated pods that the namespace's GPU quota now
// has room for.
func (l *Lifter) QuotaFreed(namespace string) { l.queue.QuotaFreed(namespace) }
