package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// gangBindTimeout bounds how long the members of a PodGroup placed
// together wait for each other before any of them is bound.
const gangBindTimeout = 30 * time.Second

// gangKey is where a placement's barrier is kept in kube-scheduler's
// placement cycle state, which every member tried on that placement shares.
const gangKey fwk.StateKey = Name + "/gang"

// gangBarriers keep the real bindings of the members of a PodGroup placed
// together in one pod group cycle until every one of them has passed what
// can fail without binding: kube-scheduler v1.37 binds each member on its
// own once the group is admitted, and cannot unbind a member when another
// one's binding fails. A member that fails first, is deleted, is given
// back, or is not there within the timeout fails its gang's barrier:
// every member's Bind then fails, kube-scheduler gives back each one's
// reservation, and the gang goes back to the queue whole, with nothing
// bound. The barriers are kept in memory only, for as long as their
// members bind: a restarted scheduler has none, and its pods of a gang
// were not bound, with nothing written for them (the phase before the
// barrier only asks for dry runs).
type gangBarriers struct {
	logger  klog.Logger
	clock   clock.WithTicker
	timeout time.Duration
	// failed is told once of each barrier that fails, with its members
	// and why.
	failed func(members []*v1.Pod, why string)

	// mu guards the map and every barrier's state.
	mu sync.Mutex
	// byPod are the barriers of the members reserved for binding.
	byPod map[types.UID]*gangBarrier
}

// gangBarrier is the barrier of the members of one PodGroup placed
// together in one pod group cycle. Its members are the pods Tessera's
// Reserve passed on the placement chosen (the last Reserve plugin in the
// shipped configuration, so that every one of them goes on to binding):
// members bound in earlier cycles, and those that did not fit, are not
// waited for.
type gangBarrier struct {
	group string
	// members are the gang's pods placed in the cycle; passed, those that
	// have passed what can fail before binding.
	members map[types.UID]*v1.Pod
	passed  map[types.UID]bool
	// deadline is when the barrier fails unless open: the timeout after
	// the first member came to it.
	deadline time.Time
	// done is closed when the barrier opens (err nil) or fails.
	done chan struct{}
	err  error
}

func newGangBarriers(logger klog.Logger, clk clock.WithTicker, timeout time.Duration, failed func([]*v1.Pod, string)) *gangBarriers {
	return &gangBarriers{logger: logger, clock: clk, timeout: timeout, failed: failed, byPod: map[types.UID]*gangBarrier{}}
}

// Clone shares the barrier: it is the placement's, not a copy's.
func (b *gangBarrier) Clone() fwk.StateData { return b }

// join adds the pod, reserved on the placement being tried in a pod group
// cycle, to the placement's barrier, and returns it; nil when there is no
// placement.
func (r *gangBarriers) join(placement fwk.PlacementCycleState, pod *v1.Pod) *gangBarrier {
	if r == nil || placement == nil || pod.Spec.SchedulingGroup == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	b := (*gangBarrier)(nil)
	if d, err := placement.Read(gangKey); err == nil {
		b, _ = d.(*gangBarrier)
	}
	if b == nil {
		b = &gangBarrier{
			group:   pod.Namespace + "/" + ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, ""),
			members: map[types.UID]*v1.Pod{},
			passed:  map[types.UID]bool{},
			done:    make(chan struct{}),
		}
		placement.Write(gangKey, b)
	}
	b.members[pod.UID] = pod
	return b
}

// admit records that the member was reserved for binding, so that its
// deletion fails the barrier; it returns the barrier's error if the
// barrier already failed.
func (r *gangBarriers) admit(b *gangBarrier, uid types.UID) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if b.err != nil {
		return b.err
	}
	r.byPod[uid] = b
	return nil
}

// wait records that the member has passed what can fail before binding,
// and waits until every member has, the barrier fails, its timeout
// passes or ctx ends; the last two fail it. It returns the barrier's
// error, nil when it opened.
func (r *gangBarriers) wait(ctx context.Context, b *gangBarrier, uid types.UID) error {
	r.mu.Lock()
	b.passed[uid] = true
	if b.deadline.IsZero() {
		b.deadline = r.clock.Now().Add(r.timeout)
	}
	if !isClosed(b.done) && b.allPassed() {
		r.finish(b, nil)
	}
	deadline := b.deadline
	r.mu.Unlock()

	timer := r.clock.NewTimer(deadline.Sub(r.clock.Now()))
	defer timer.Stop()
	select {
	case <-b.done:
	case <-timer.C():
		r.fail(b, fmt.Errorf("not every pod of PodGroup %s placed with it could be bound within %v", b.group, r.timeout))
	case <-ctx.Done():
		r.fail(b, fmt.Errorf("the binding of a pod of PodGroup %s ended: %w", b.group, context.Cause(ctx)))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return b.err
}

// fail fails the barrier for err, unless it is open or failed already.
func (r *gangBarriers) fail(b *gangBarrier, err error) {
	r.mu.Lock()
	open := isClosed(b.done)
	if !open {
		r.finish(b, err)
	}
	members := slices.Collect(maps.Values(b.members))
	r.mu.Unlock()
	if !open && r.failed != nil {
		r.failed(members, err.Error())
	}
}

// finish opens the barrier (err nil) or fails it, and forgets its
// members. It runs under r.mu.
func (r *gangBarriers) finish(b *gangBarrier, err error) {
	b.err = err
	close(b.done)
	for uid := range b.members {
		if r.byPod[uid] == b {
			delete(r.byPod, uid)
		}
	}
}

// podDeleted fails the barrier of a deleted pod reserved for binding.
func (r *gangBarriers) podDeleted(obj any) {
	if tombstone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = tombstone.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	r.mu.Lock()
	b := r.byPod[pod.UID]
	r.mu.Unlock()
	if b != nil {
		r.logger.V(4).Info("A pod of a gang being bound was deleted; rolling back its gang", "pod", klog.KObj(pod))
		r.fail(b, fmt.Errorf("pod %s/%s of PodGroup %s was deleted", pod.Namespace, pod.Name, b.group))
	}
}

// allPassed reports whether every member has passed.
func (b *gangBarrier) allPassed() bool {
	for uid := range b.members {
		if !b.passed[uid] {
			return false
		}
	}
	return true
}

// isClosed reports whether ch is closed.
func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
