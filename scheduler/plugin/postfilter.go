package plugin

import (
	"context"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// maxNodesNamed is the most nodes PostFilter names; the rest are counted.
const maxNodesNamed = 3

// PostFilter runs after kube-scheduler's DefaultPreemption, and only when
// that found nothing to evict. It says why no eviction of GPU pods makes
// room, in the status that kube-scheduler's FailedScheduling event and the
// pod's PodScheduled condition carry: the pod may not preempt, no node
// where its GPUs are short has lower-priority GPU pods, evicting every
// one of them still leaves no room (and what is short then), no node
// could ever take them (and the limit, such as the largest GPU's memory),
// or a quota on GPU compute wants compute the pod's slices do not state.
func (p *Plugin) PostFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	// DefaultPreemption evicts nothing: its dry run's victims are moot.
	p.dryRuns.take(pod.UID, "")
	// Room the pod was activated for is left for others.
	p.requeue.Failed(pod.UID)
	s, err := readState(state)
	if err != nil || len(s.req.Containers) == 0 || pod.Status.NominatedNodeName != "" {
		// Not a GPU pod, or one whose preemption is under way.
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	if unstated := s.quota.Unstated; !unstated.OK() {
		return nil, fwk.NewStatus(fwk.Unschedulable, "GPU preemption: none, "+string(unstated))
	}
	if turnedAway, every := s.overQuota.read(""); turnedAway.Any {
		p.requeue.OverQuota(pod, s.quotaAt, turnedAway.Asked)
		if every {
			return nil, fwk.NewStatus(fwk.Unschedulable, "GPU preemption: none, "+noQuotaEviction)
		}
	}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy == v1.PreemptNever {
		return nil, fwk.NewStatus(fwk.Unschedulable, "GPU preemption: none, the pod's preemptionPolicy is Never")
	}
	var nodes []fwk.NodeInfo
	for _, code := range []fwk.Code{fwk.Unschedulable, fwk.UnschedulableAndUnresolvable} {
		found, err := m.NodesForStatusCode(p.handle.SnapshotSharedLister().NodeInfos(), code)
		if err != nil {
			return nil, fwk.AsStatus(fmt.Errorf("listing the nodes the pod's GPUs did not fit: %w", err))
		}
		nodes = append(nodes, found...)
	}
	nodes, overQuota := s.notOverQuota(nodes)
	var more []string
	if overQuota > 0 {
		more = append(more, fmt.Sprintf("%d node(s) would take the pod's GPUs but its namespace's GPU quota has no room for them there, and %s", overQuota, noQuotaEviction))
	}
	why := p.whyNoPreemption(pod, s.req, nodes, m, s.evictless, more...)
	klog.FromContext(ctx).V(4).Info("No GPU preemption helps", "pod", klog.KObj(pod), "reason", why)
	return nil, fwk.NewStatus(fwk.Unschedulable, why)
}

// noQuotaEviction says why a node where the pod's namespace's GPU quota
// has no room for it is passed by.
const noQuotaEviction = "no pod is evicted to make room in a namespace's GPU quota"

// whyNoPreemption words, for the nodes on which the pod's GPUs did not fit
// (Tessera's Filter failed them), why evicting lower-priority pods there
// does not make room, or why the node could never take them (see
// whyNever), followed by more. evictless are the nodes Filter called
// unresolvable for having nothing to evict, not for never fitting.
func (p *Plugin) whyNoPreemption(pod *v1.Pod, req podrequest.Request, nodes []fwk.NodeInfo, m fwk.NodeToStatusReader, evictless *nodeSet, more ...string) string {
	priority := preemption.Priority(pod)
	var short, never []string
	var none, wouldFit int
	for _, ni := range nodes {
		name := ni.Node().Name
		st := m.Get(name)
		if st == nil || st.Plugin() != Name {
			// Not a node where the pod's GPUs were what did not fit.
			continue
		}
		lower := map[types.UID]bool{}
		for _, pi := range ni.GetPods() {
			if preemption.Priority(pi.GetPod()) < priority {
				lower[pi.GetPod().UID] = true
			}
		}
		if st.Code() == fwk.UnschedulableAndUnresolvable && !evictless.has(name) {
			never = append(never, name)
			continue
		}
		if len(lower) == 0 {
			none++
			continue
		}
		p.view.Read([]string{name}, pod.UID, func(_ string, n *view.Node) {
			if n == nil {
				return
			}
			held := 0
			_, failure := preemption.FitWithout(n, req.Request, func(uid types.UID) bool {
				if lower[uid] {
					held++
				}
				return lower[uid]
			})
			switch {
			case held == 0:
				none++
			case failure != nil:
				short = append(short, fmt.Sprintf("evicting all %d lower-priority GPU pods on node %s would not make room: %s",
					held, name, failure.Of("without them the node")))
			default:
				wouldFit++
			}
		})
	}
	slices.Sort(short)
	var parts []string
	if len(short) > maxNodesNamed {
		short = append(short[:maxNodesNamed], fmt.Sprintf("%d more nodes alike", len(short)-maxNodesNamed))
	}
	parts = append(parts, short...)
	parts = append(parts, p.whyNever(pod, req, never)...)
	if none > 0 {
		parts = append(parts, fmt.Sprintf("%d node(s) had no lower-priority pods holding GPUs", none))
	}
	parts = append(parts, more...)
	if wouldFit > 0 {
		parts = append(parts, fmt.Sprintf("%d node(s) would have room without their lower-priority GPU pods, but kube-scheduler's preemption took none of them (its other filters, or PodDisruptionBudgets)", wouldFit))
	}
	if len(parts) == 0 {
		return "GPU preemption: none, the pod's GPUs are not what is short"
	}
	return "GPU preemption: none; " + strings.Join(parts, "; ")
}

// tellPreempting, in the first scheduling cycle after kube-scheduler
// nominated the pod to a node by preemption, records an event on the pod
// naming the GPU pods evicted there and the GPUs that frees.
func (p *Plugin) tellPreempting(pod *v1.Pod, req podrequest.Request) {
	node := pod.Status.NominatedNodeName
	if node == "" {
		return
	}
	victims := p.dryRuns.take(pod.UID, node)
	if len(victims) == 0 {
		return
	}
	names := make([]string, len(victims))
	for i, v := range victims {
		names[i] = v.name
	}
	gone := func(uid types.UID) bool {
		return slices.ContainsFunc(victims, func(v victim) bool { return v.uid == uid })
	}
	var note string
	p.view.Read([]string{node}, pod.UID, func(_ string, n *view.Node) {
		if n == nil {
			return
		}
		if containers, failure := preemption.FitWithout(n, req.Request, gone); failure == nil {
			note = preemption.DescribeEviction(node, names, containers)
		}
	})
	if note == "" {
		note = preemption.DescribeEviction(node, names, nil)
	}
	p.notifier.Notify(pod, v1.EventTypeNormal, preemption.ReasonPreempting, note)
}
