package drascore

import (
	"context"
	"sync"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

var _ fwk.EnqueueExtensions = (*Plugin)(nil)

// waiting are the pods the plugin turned away for their namespace's GPU
// quota, by namespace, so that a change to the namespace's ResourceQuotas,
// which kube-scheduler does not watch, activates them. Each namespace's
// quota has a version, raised at each change, so that a pod turned away
// by a quota that changed while its cycle read it is activated at once.
// It is safe for concurrent use.
type waiting struct {
	mu       sync.Mutex
	pods     map[string]map[types.UID]*v1.Pod
	versions map[string]uint64
}

// version is the namespace's quota version now.
func (w *waiting) version(namespace string) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.versions[namespace]
}

// add records the pod as turned away by its namespace's quota as it was
// at version seen; it reports whether the quota has changed since, and
// the pod is to be activated now. A pod already recorded reports false.
func (w *waiting) add(pod *v1.Pod, seen uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pods == nil {
		w.pods = map[string]map[types.UID]*v1.Pod{}
	}
	ns := w.pods[pod.Namespace]
	if ns == nil {
		ns = map[types.UID]*v1.Pod{}
		w.pods[pod.Namespace] = ns
	}
	if _, ok := ns[pod.UID]; ok {
		return false
	}
	ns[pod.UID] = pod
	return w.versions[pod.Namespace] != seen
}

// forget drops the pod: its cycle begins again, or it is gone.
func (w *waiting) forget(pod *v1.Pod) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ns := w.pods[pod.Namespace]; ns != nil {
		delete(ns, pod.UID)
		if len(ns) == 0 {
			delete(w.pods, pod.Namespace)
		}
	}
}

// quotaChanged raises the namespace's quota version and returns the pods
// its quota turned away.
func (w *waiting) quotaChanged(namespace string) []*v1.Pod {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.versions == nil {
		w.versions = map[string]uint64{}
	}
	w.versions[namespace]++
	var pods []*v1.Pod
	for _, pod := range w.pods[namespace] {
		pods = append(pods, pod)
	}
	return pods
}

// EventsToRegister asks kube-scheduler about a pod the plugin turned away
// when a claim of its namespace gives GPUs back: its allocation removed,
// or the claim deleted while allocated. Changes to ResourceQuotas reach
// the plugin through its own informer handler (quotaHandler).
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.ResourceClaim, ActionType: fwk.Update | fwk.Delete}, QueueingHintFn: claimFreed},
	}, nil
}

// claimFreed queues the pod when the claim, of the pod's namespace, held
// devices of Tessera's driver and holds them no longer. A deleted claim
// whose last state is unknown queues every pod of its namespace.
func claimFreed(_ klog.Logger, pod *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	if gone, ok := oldObj.(cache.DeletedFinalStateUnknown); ok {
		if ns, _, err := cache.SplitMetaNamespaceKey(gone.Key); err == nil && ns != pod.Namespace {
			return fwk.QueueSkip, nil
		}
		return fwk.Queue, nil
	}
	old, ok := oldObj.(*resourceapi.ResourceClaim)
	if !ok || old.Namespace != pod.Namespace || !holdsGPUs(old) {
		return fwk.QueueSkip, nil
	}
	if claim, ok := newObj.(*resourceapi.ResourceClaim); ok && claim.Status.Allocation != nil {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// holdsGPUs reports whether the claim is allocated devices of Tessera's
// driver.
func holdsGPUs(claim *resourceapi.ResourceClaim) bool {
	if claim.Status.Allocation == nil {
		return false
	}
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver == gpuv1alpha1.DRADriverName {
			return true
		}
	}
	return false
}

// quotaHandler activates the pods a namespace's quota turned away when
// one of its ResourceQuotas on GPUs may give it more room (see
// quota.RaisedHandler): not on each rewrite of a quota's status, after
// which each pod would read every claim and slice again for nothing.
func (p *Plugin) quotaHandler(ctx context.Context) cache.ResourceEventHandlerFuncs {
	return quota.RaisedHandler(func(namespace string) {
		p.activate(ctx, "GPU quota changed; retrying pods", p.waiting.quotaChanged(namespace), "namespace", namespace)
	})
}

// podGone forgets a deleted pod the quota turned away.
func (p *Plugin) podGone(obj any) {
	if gone, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = gone.Obj
	}
	if pod, ok := obj.(*v1.Pod); ok {
		p.waiting.forget(pod)
	}
}

// activate moves the pods to kube-scheduler's active queue.
func (p *Plugin) activate(ctx context.Context, msg string, pods []*v1.Pod, kv ...any) {
	if len(pods) == 0 {
		return
	}
	m := make(map[string]*v1.Pod, len(pods))
	for _, pod := range pods {
		m[pod.Namespace+"/"+pod.Name] = pod
	}
	logger := klog.FromContext(ctx)
	logger.V(4).Info(msg, append(kv, "pods", len(pods))...)
	p.activator.Activate(logger, m)
}
