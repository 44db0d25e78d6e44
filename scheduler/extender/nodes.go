package extender

import (
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// nodeNames returns the candidate nodes' names, whether the scheduler sent
// names (nodeCacheCapable) or whole nodes.
func nodeNames(args *extenderv1.ExtenderArgs) []string {
	if args.NodeNames != nil {
		return *args.NodeNames
	}
	if args.Nodes == nil {
		return nil
	}
	names := make([]string, len(args.Nodes.Items))
	for i := range args.Nodes.Items {
		names[i] = args.Nodes.Items[i].Name
	}
	return names
}

// filterNodeList returns the scheduler's nodes whose names are feasible.
func filterNodeList(args *extenderv1.ExtenderArgs, feasible []string) *corev1.NodeList {
	keep := make(map[string]bool, len(feasible))
	for _, name := range feasible {
		keep[name] = true
	}
	out := &corev1.NodeList{}
	for i := range args.Nodes.Items {
		if keep[args.Nodes.Items[i].Name] {
			out.Items = append(out.Items, args.Nodes.Items[i])
		}
	}
	return out
}
