package plugin

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// Back-off of a PodGroup's pod whose binding failed: kube-scheduler's own
// back-off for pods, which v1.37 does not apply to a pod group's members.
const (
	bindBackoffInitial = time.Second
	bindBackoffMax     = 10 * time.Second
)

// bindBackoff holds back a PodGroup's pod whose binding failed. Kubernetes
// v1.37 requeues the rest of a pod group without back-off once the group
// was placed, so a member whose binding the API server refuses (an
// admission policy, a node going away) is tried again at once, and each
// try writes its GPUAllocation and deletes it again: more than a hundred
// in five seconds. PreFilter turns such a pod away until its back-off
// ends, 1 s after the first failure and doubling up to 10 s, and the pod
// is activated then. The pods of a gang rolled back together (see
// gangBarriers) are held back and activated together. A nil bindBackoff
// holds back no pod.
type bindBackoff struct {
	ctx       context.Context
	clock     clock.WithTicker
	activator fwk.PodActivator

	mu   sync.Mutex
	pods map[types.UID]*backedOff
}

// backedOff is a pod waiting out its back-off.
type backedOff struct {
	until  time.Time
	delay  time.Duration
	reason string
}

func newBindBackoff(ctx context.Context, clk clock.WithTicker, activator fwk.PodActivator) *bindBackoff {
	return &bindBackoff{ctx: ctx, clock: clk, activator: activator, pods: map[types.UID]*backedOff{}}
}

// failed starts or doubles the back-off of pods whose binding failed,
// why, and activates them together when it ends: the members of a gang
// rolled back together wait out the longest back-off of any of them, so
// that the gang is tried again whole. Pods that belong to no PodGroup are
// left to kube-scheduler's own back-off.
func (b *bindBackoff) failed(pods []*v1.Pod, why string) {
	if b == nil {
		return
	}
	pods = slices.DeleteFunc(slices.Clone(pods), func(pod *v1.Pod) bool { return pod.Spec.SchedulingGroup == nil })
	if len(pods) == 0 {
		return
	}
	now := b.clock.Now()
	b.mu.Lock()
	for uid, o := range b.pods {
		// A pod deleted while it waited is never bound: drop it once its
		// back-off could not grow any more.
		if now.Sub(o.until) > bindBackoffMax {
			delete(b.pods, uid)
		}
	}
	var delay time.Duration
	for _, pod := range pods {
		if o, ok := b.pods[pod.UID]; ok {
			delay = max(delay, o.delay)
		}
	}
	delay = min(max(2*delay, bindBackoffInitial), bindBackoffMax)
	activate := make(map[string]*v1.Pod, len(pods))
	for _, pod := range pods {
		b.pods[pod.UID] = &backedOff{until: now.Add(delay), delay: delay,
			reason: fmt.Sprintf("%s; Tessera tries this pod of PodGroup %s again after %v",
				why, ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, ""), delay)}
		activate[pod.Namespace+"/"+pod.Name] = pod
	}
	b.mu.Unlock()

	timer := b.clock.NewTimer(delay)
	go func() {
		defer timer.Stop()
		select {
		case <-timer.C():
			logger := klog.FromContext(b.ctx)
			logger.V(4).Info("Retrying PodGroup pods after their binding failed", "pods", len(activate))
			b.activator.Activate(logger, activate)
		case <-b.ctx.Done():
		}
	}()
}

// bound forgets the pod's back-off.
func (b *bindBackoff) bound(uid types.UID) {
	if b == nil {
		return
	}
	b.mu.Lock()
	delete(b.pods, uid)
	b.mu.Unlock()
}

// waiting returns why the pod waits, while its back-off lasts.
func (b *bindBackoff) waiting(uid types.UID) (string, bool) {
	if b == nil {
		return "", false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	o, ok := b.pods[uid]
	if !ok || !b.clock.Now().Before(o.until) {
		return "", false
	}
	return o.reason, true
}
