package plugin

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// requeuer activates the GPU pods not yet placed once the view frees GPUs.
// The queueing hints (EventsToRegister) come from kube-scheduler's own
// informers, which may deliver an event before the plugin's informers have
// changed the view; a pod retried then would be turned away again and wait
// for the next event. The tracker tells the requeuer after the view changed.
// A pod is remembered from its first PreFilter until Reserve places it or
// it is deleted; activating one that is placeable already does no harm.
type requeuer struct {
	activator fwk.PodActivator
	logger    klog.Logger

	mu   sync.Mutex
	pods map[string]podRef
}

// podRef is a pod waiting for GPUs, keyed by namespace/name.
type podRef struct {
	uid types.UID
	pod *v1.Pod
}

// waiting remembers a pod that is being placed.
func (r *requeuer) waiting(pod *v1.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods[pod.Namespace+"/"+pod.Name] = podRef{uid: pod.UID, pod: pod}
}

// forget drops a pod that was placed or is gone.
func (r *requeuer) forget(uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for key, ref := range r.pods {
		if ref.uid == uid {
			delete(r.pods, key)
			return
		}
	}
}

// Freed activates every pod waiting, since GPUs may now fit them.
func (r *requeuer) Freed() {
	r.mu.Lock()
	if len(r.pods) == 0 {
		r.mu.Unlock()
		return
	}
	pods := make(map[string]*v1.Pod, len(r.pods))
	for key, ref := range r.pods {
		pods[key] = ref.pod
	}
	r.mu.Unlock()
	r.logger.V(4).Info("GPUs freed; retrying pods", "pods", len(pods))
	r.activator.Activate(r.logger, pods)
}

// Forget drops a pod that is gone.
func (r *requeuer) Forget(uid types.UID) { r.forget(uid) }
