package extender

import (
	"context"
	"fmt"

	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Filter returns every candidate node the pod's GPU request fits, and for
// every other node why not. Nodes that cannot fit the pod even with every
// GPU free, or that take no GPU pods at all, are unresolvable.
func (e *Extender) Filter(ctx context.Context, args *extenderv1.ExtenderArgs) (*extenderv1.ExtenderFilterResult, string) {
	if !e.ready() {
		return &extenderv1.ExtenderFilterResult{Error: errNotReady.Error()}, metrics.ResultError
	}
	if args.Pod == nil {
		return &extenderv1.ExtenderFilterResult{Error: "Pod: Required value: the pod to filter nodes for"}, metrics.ResultInvalid
	}
	names := nodeNames(args)
	pod := args.Pod
	req, err := e.request(pod)
	if err != nil {
		return &extenderv1.ExtenderFilterResult{
			Error: fmt.Sprintf("pod %s/%s has an invalid GPU request: %v", pod.Namespace, pod.Name, err),
		}, metrics.ResultInvalid
	}

	feasible := make([]string, 0, len(names))
	failed := extenderv1.FailedNodesMap{}
	unresolvable := extenderv1.FailedNodesMap{}
	if len(req.Containers) == 0 {
		// Nothing to place: every node fits.
		feasible = append(feasible, names...)
	} else {
		now := e.Clock.Now()
		var f placement.Failure
		e.View.Read(names, pod.UID, func(name string, n *view.Node) {
			if reason := e.unavailable(n, now); reason != "" {
				unresolvable[name] = reason
				return
			}
			switch {
			case placement.Feasible(&n.Placement, req.Request, &f):
				feasible = append(feasible, name)
			case f.Unresolvable:
				unresolvable[name] = f.Error()
			default:
				failed[name] = f.Error()
			}
		})
	}

	result := &extenderv1.ExtenderFilterResult{
		NodeNames:                  &feasible,
		FailedNodes:                failed,
		FailedAndUnresolvableNodes: unresolvable,
	}
	if args.Nodes != nil && args.NodeNames == nil {
		// A scheduler that is not node-cache capable expects whole nodes back.
		result.Nodes = filterNodeList(args, feasible)
		result.NodeNames = nil
	}
	klog.FromContext(ctx).V(4).Info("Filtered nodes", "pod", klog.KObj(pod), "candidates", len(names),
		"feasible", len(feasible), "failed", len(failed), "unresolvable", len(unresolvable))
	if len(feasible) == 0 {
		if e.Requeue != nil {
			e.Requeue.Rejected(pod)
		}
		return result, metrics.ResultUnschedulable
	}
	return result, metrics.ResultSuccess
}
