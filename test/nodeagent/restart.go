package nodeagent

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// reconcilePeriod is how often the agent looks for pods that are gone but
// still hold claims or devices. The kubelet's DRA manager looks every
// minute; the agent looks often, so that tests see a node let go soon.
const reconcilePeriod = time.Second

// Reboot records that the node rebooted while the agent was stopped: no
// container survived, so the next Run starts the containers of the node's
// running pods again. As the kubelet does when it creates their sandboxes
// anew, it prepares their claims again (a reboot may have taken the
// drivers' CDI specs) and the containers get the CDI devices of that
// answer; what device plugins answered stays, as the kubelet's device
// manager reuses it from its checkpoint.
func (a *Agent) Reboot() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for uid := range a.results {
		a.restart[uid] = true
	}
}

// restartContainers starts the containers of a running pod again after a
// reboot.
func (a *Agent) restartContainers(ctx context.Context, pod *corev1.Pod) error {
	cdiDevices, err := a.prepareClaims(ctx, pod)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	results := slices.DeleteFunc(slices.Clone(a.results[pod.UID]), func(r ContainerResult) bool { return r.Resource == "" })
	a.results[pod.UID] = append(results, cdiResults(pod, cdiDevices)...)
	delete(a.restart, pod.UID)
	return nil
}

// restarting says whether the pod's containers are to be started again.
func (a *Agent) restarting(uid types.UID) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.restart[uid]
}

// cdiResults are the containers' results for the CDI devices their claims
// got, init containers first.
func cdiResults(pod *corev1.Pod, cdiDevices map[string][]string) []ContainerResult {
	var out []ContainerResult
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		if ids, ok := cdiDevices[c.Name]; ok {
			out = append(out, ContainerResult{Container: c.Name, CDIDevices: ids})
		}
	}
	return out
}

// reconcileLoop frees, until ctx ends, what pods that are gone still hold.
func (a *Agent) reconcileLoop(ctx context.Context, pods corelisters.PodLister) {
	wait.UntilWithContext(ctx, func(ctx context.Context) { a.reconcile(ctx, pods) }, reconcilePeriod)
}

// reconcile frees the devices and unprepares the claims of every pod that
// holds some but is no longer on the node or has finished, as the
// kubelet's DRA manager does: pods deleted while the agent was stopped,
// whose deletion it never saw, and pods whose claims a driver failed to
// unprepare.
func (a *Agent) reconcile(ctx context.Context, pods corelisters.PodLister) {
	// The holders are read before the pods: a pod admitted since is in
	// the informer's cache already, and is not taken for gone.
	a.mu.Lock()
	holders := sets.KeySet(a.claims).Union(sets.KeySet(a.held))
	a.mu.Unlock()
	list, err := pods.List(labels.Everything())
	if err != nil {
		return
	}
	for _, p := range list {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			holders.Delete(p.UID)
		}
	}
	for uid := range holders {
		a.release(uid)
		a.unprepareClaims(ctx, uid)
	}
}
