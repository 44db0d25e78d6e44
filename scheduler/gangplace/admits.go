package gangplace

import (
	corev1 "k8s.io/api/core/v1"
	v1helper "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	"k8s.io/klog/v2"
)

// Admits returns whether the pod could run on a node at all, as
// kube-scheduler judges it: by the pod's node selector and required node
// affinity, and its tolerations of the node's NoSchedule and NoExecute
// taints.
func Admits(pod *corev1.Pod) func(node *corev1.Node) bool {
	required := nodeaffinity.GetRequiredNodeAffinity(pod)
	blocking := func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute
	}
	return func(node *corev1.Node) bool {
		if ok, err := required.Match(node); err != nil || !ok {
			return false
		}
		_, untolerated := v1helper.FindMatchingUntoleratedTaint(klog.Background(), node.Spec.Taints, pod.Spec.Tolerations, blocking, false)
		return !untolerated
	}
}
