package extender

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Prioritize scores each candidate node from 0 to 10 by the pod's node
// policy, relative to the other candidates (placement.Rank): binpack
// favours the busiest node, spread the emptiest. A node the pod does not
// fit scores 0.
func (e *Extender) Prioritize(ctx context.Context, args *extenderv1.ExtenderArgs) (extenderv1.HostPriorityList, string, error) {
	if !e.ready() {
		return nil, metrics.ResultError, errNotReady
	}
	if args.Pod == nil {
		return nil, metrics.ResultInvalid, errors.New("Pod: Required value: the pod to score nodes for")
	}
	pod := args.Pod
	req, err := e.request(pod)
	if err != nil {
		return nil, metrics.ResultInvalid, fmt.Errorf("pod %s/%s has an invalid GPU request: %w", pod.Namespace, pod.Name, err)
	}
	names := nodeNames(args)
	scores := make(extenderv1.HostPriorityList, 0, len(names))
	if len(req.Containers) == 0 {
		for _, name := range names {
			scores = append(scores, extenderv1.HostPriority{Host: name})
		}
		return scores, metrics.ResultSuccess, nil
	}
	now := e.Clock.Now()
	loads := make([]float64, 0, len(names))
	fits := make([]bool, 0, len(names))
	e.View.Read(names, pod.UID, func(name string, n *view.Node) {
		var load float64
		ok := e.unavailable(n, now) == ""
		if ok {
			load, ok = placement.Load(&n.Placement, req.Request)
		}
		scores = append(scores, extenderv1.HostPriority{Host: name})
		loads, fits = append(loads, load), append(fits, ok)
	})
	for i, score := range placement.Rank(loads, fits, req.nodePolicy) {
		scores[i].Score = score
	}
	klog.FromContext(ctx).V(5).Info("Scored nodes", "pod", klog.KObj(pod), "policy", req.nodePolicy, "scores", scores)
	return scores, metrics.ResultSuccess, nil
}
