package extender

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// podGroupRefusal is why a GPU pod of a PodGroup (Kubernetes' Workload
// API) is placed nowhere in extender mode, or "" for a pod of no group.
// kube-scheduler's pod group cycle reserves every member of a gang on a
// trial run and undoes it through Reserve and Unreserve, and binds a member
// whose group fits while another member's binding may fail; an extender
// hears of none of that, so its books would keep GPUs for pods never
// placed. tessera-scheduler (plugin mode) takes part in the cycle, and
// Kueue's gang-fit check serves gangs in extender mode.
func podGroupRefusal(pod *corev1.Pod) string {
	if pod.Spec.SchedulingGroup == nil {
		return ""
	}
	return fmt.Sprintf("pod is in PodGroup %s, and gangs of GPU slices are placed only by tessera-scheduler "+
		"(Tessera's plugin mode): the scheduler extender cannot undo what kube-scheduler's pod group cycle reserves",
		ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, ""))
}
