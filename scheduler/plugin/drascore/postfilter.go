package drascore

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

var _ fwk.PostFilterPlugin = (*Plugin)(nil)

// PostFilter runs when no node passed the filters, after kube-scheduler's
// DefaultPreemption found nothing to evict. When no node could ever hold
// the pod's claims of Tessera's classes, not even with all its GPUs free,
// it says why in placement's words, the words extender and plugin mode
// use (a type no GPU has, UUIDs no node holds, more memory than any GPU):
// DynamicResources says only that it cannot allocate all claims. The
// reason goes into the pod's FailedScheduling event and PodScheduled
// condition. A pod that some node could hold once GPUs free gets no
// reason of Tessera's: it waits for room, and preemption has spoken.
//
// The GPUs are judged empty, so no claim's consumed capacity is gathered;
// the pass ends at the first node that could hold the pod.
func (p *Plugin) PostFilter(ctx context.Context, _ fwk.CycleState, pod *v1.Pod, _ fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	candidates, _, status := p.podRequests(ctx, pod)
	if !status.IsSuccess() {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	listed, err := p.dra.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("listing ResourceSlices: %w", err))
	}
	why, never := p.neverFits(p.gpus.nodeSlices(listed, nil), candidates)
	if !never {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	klog.FromContext(ctx).V(4).Info("No node could ever hold the pod's GPU claims", "pod", klog.KObj(pod), "reason", why)
	return nil, fwk.NewStatus(fwk.Unschedulable, "GPUs: "+why)
}

// neverFits reports whether none of the nodes' GPUs, all free, would hold
// any of the candidate requests, and if so why, by node count as
// kube-scheduler words its filters' reasons: "2 node(s) had 0/8 GPUs that
// fit (8 type mismatch)".
func (p *Plugin) neverFits(nodes map[string][]*gpuSlice, candidates []*placement.Request) (string, bool) {
	if len(nodes) == 0 {
		return "no node publishes GPUs of " + strings.Join(p.args.DeviceClasses, ", "), true
	}
	w := p.scorers.Get().(*scorer)
	defer p.scorers.Put(w)
	counts := map[string]int{}
	for name, slices := range nodes {
		gpuNode(&w.node, name, slices, nil, nil)
		var first placement.Failure
		if w.fitter.Feasible(&w.node, candidates[0], &first) {
			return "", false
		}
		for _, req := range candidates[1:] {
			if w.fitter.Feasible(&w.node, req, nil) {
				return "", false
			}
		}
		counts[first.Error()]++
	}
	reasons := slices.SortedFunc(maps.Keys(counts), func(a, b string) int {
		return cmp.Or(cmp.Compare(counts[b], counts[a]), cmp.Compare(a, b))
	})
	for i, r := range reasons {
		reasons[i] = fmt.Sprintf("%d %s", counts[r], r)
	}
	return strings.Join(reasons, ", "), true
}
