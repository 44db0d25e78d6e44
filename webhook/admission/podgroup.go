package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// PodGroupAPI says whether the API server serves PodGroups
// (scheduling.k8s.io/v1beta1, Kubernetes' Workload API), in production
// from discovery.
type PodGroupAPI interface {
	PodGroupsServed(ctx context.Context) bool
}

// podGroupWarning warns when a GPU pod names a PodGroup that the cluster
// cannot have: without the GenericWorkload feature gate kube-apiserver
// drops spec.schedulingGroup after admission without a word, and the pod
// is scheduled alone, not as part of its gang. Mutating admission still
// sees the field, so the webhook is the last to be able to say so. "" when
// the pod names no PodGroup, asks for no GPU, or the API is served.
func (a *Admitter) podGroupWarning(ctx context.Context, pod *corev1.Pod) string {
	group := pod.Spec.SchedulingGroup
	if group == nil || !a.podAsks(&pod.Spec) || a.podGroups.PodGroupsServed(ctx) {
		return ""
	}
	return fmt.Sprintf("pod names PodGroup %q (spec.schedulingGroup), but the cluster does not serve PodGroups "+
		"(scheduling.k8s.io/v1beta1): the API server drops the field and the pod is placed alone, not with its gang; "+
		"turn on the GenericWorkload feature gate in kube-apiserver, kube-scheduler and kube-controller-manager and "+
		"--runtime-config=scheduling.k8s.io/v1beta1=true in kube-apiserver, and schedule gangs with tessera-scheduler",
		ptr.Deref(group.PodGroupName, ""))
}
