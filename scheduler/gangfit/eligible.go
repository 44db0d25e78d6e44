package gangfit

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/tessera-gpu/tessera/scheduler/gangplace"
)

// eligible returns which nodes a pod of the pod set could run on at all,
// as kube-scheduler will judge it once Kueue starts the pods: the
// template's node selector and required affinity, with the node labels of
// every flavor Kueue assigned the pod set, and the template's tolerations
// with the flavors' against the nodes' NoSchedule and NoExecute taints.
// Room is held only there, so that it is never held where the pods cannot
// go while another team's pods wait for it.
func (c *Controller) eligible(w *workload, ps *podSet, pod *corev1.Pod) (func(node string) bool, error) {
	pod = pod.DeepCopy()
	if a := w.assignment(ps); a != nil {
		names := slices.Sorted(maps.Values(a.Flavors))
		for _, name := range slices.Compact(names) {
			obj, exists, err := c.flavors.GetIndexer().GetByKey(name)
			if err != nil || !exists {
				return nil, fmt.Errorf("pod set %s: ResourceFlavor %s is not known yet", ps.Name, name)
			}
			var f resourceFlavor
			if err := fromUnstructured(obj, &f); err != nil {
				return nil, fmt.Errorf("pod set %s: reading ResourceFlavor %s: %w", ps.Name, name, err)
			}
			if len(f.Spec.NodeLabels) > 0 && pod.Spec.NodeSelector == nil {
				pod.Spec.NodeSelector = map[string]string{}
			}
			maps.Copy(pod.Spec.NodeSelector, f.Spec.NodeLabels)
			pod.Spec.Tolerations = append(pod.Spec.Tolerations, f.Spec.Tolerations...)
		}
	}
	admits := gangplace.Admits(pod)
	judge := func(name string) bool {
		node, err := c.cfg.Nodes.Get(name)
		return err == nil && admits(node)
	}
	// Every member of the pod set asks of every node, under the view's
	// lock: each node is judged once. The view calls it from one
	// goroutine, the hold's.
	judged := map[string]bool{}
	return func(name string) bool {
		ok, seen := judged[name]
		if !seen {
			ok = judge(name)
			judged[name] = ok
		}
		return ok
	}, nil
}
