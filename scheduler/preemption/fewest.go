package preemption

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Priority is the pod's priority, which admission sets from its
// PriorityClass; 0 when unset.
func Priority(pod *corev1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	return 0
}

// Fewest chooses which of candidates, the lower-priority pods on the node
// least important first, to evict for req, in the manner of
// kube-scheduler's preemption: all of them go, then each is given back,
// the most important first (in the candidates' order), if req still fits
// without the others. Unlike kube-scheduler it reads no
// PodDisruptionBudgets and no start times, so where kube-scheduler
// chooses (plugin mode) other pods may go. It returns the victims and the
// GPUs the pod would get, or why evicting all of them would still not make
// room. It runs under the view's read lock (in Read's fn).
func Fewest(n *view.Node, req *placement.Request, candidates []types.UID) ([]types.UID, []gpuv1alpha1.ContainerAllocation, *placement.Failure) {
	gone := map[types.UID]bool{}
	for _, uid := range candidates {
		gone[uid] = true
	}
	without := func(uid types.UID) bool { return gone[uid] }
	containers, failure := FitWithout(n, req, without)
	if failure != nil {
		return nil, nil, failure
	}
	for _, uid := range slices.Backward(candidates) {
		delete(gone, uid)
		if c, f := FitWithout(n, req, without); f == nil {
			containers = c
			continue
		}
		gone[uid] = true
	}
	var victims []types.UID
	for _, uid := range candidates {
		if gone[uid] {
			victims = append(victims, uid)
		}
	}
	return victims, containers, nil
}
