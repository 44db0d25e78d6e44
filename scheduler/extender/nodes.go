package extender

import corev1 "k8s.io/api/core/v1"

// filterNodeList returns the scheduler's nodes whose names are feasible.
func filterNodeList(nodes *corev1.NodeList, feasible []string) *corev1.NodeList {
	keep := make(map[string]bool, len(feasible))
	for _, name := range feasible {
		keep[name] = true
	}
	out := &corev1.NodeList{}
	for i := range nodes.Items {
		if keep[nodes.Items[i].Name] {
			out.Items = append(out.Items, nodes.Items[i])
		}
	}
	return out
}
