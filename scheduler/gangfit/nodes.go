package gangfit

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// NodeHandler is told of the cluster's Nodes. A node that joins, or whose
// labels, taints or schedulability change, may now run pod sets it could
// not (a flavor's node labels, a template's selector or tolerations): the
// Workloads the check sent back are decided again, as after a free.
func (c *Controller) NodeHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(any) { c.roomFreed() },
		UpdateFunc: func(oldObj, newObj any) {
			old, ok1 := oldObj.(*corev1.Node)
			node, ok2 := newObj.(*corev1.Node)
			if ok1 && ok2 && placementChanged(old, node) {
				c.roomFreed()
			}
		},
	}
}

// placementChanged reports whether a node changed in what decides which
// pods may run on it.
func placementChanged(old, node *corev1.Node) bool {
	return !maps.Equal(old.Labels, node.Labels) ||
		!slices.EqualFunc(old.Spec.Taints, node.Spec.Taints, func(a, b corev1.Taint) bool { return a.MatchTaint(&b) && a.Value == b.Value }) ||
		old.Spec.Unschedulable != node.Spec.Unschedulable
}
