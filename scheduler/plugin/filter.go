package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// errNotReady turns pods away while the view is still being built.
var errNotReady = errors.New("Tessera's view of GPUs and allocations is not yet synced with the API")

// PreFilter reads the pod's GPU request into the cycle state. A pod that
// asks for no GPUs skips the plugin's Filter; one whose request is invalid
// is unschedulable until it is changed.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	req, err := p.parser.Parse(pod)
	if err != nil {
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable,
			fmt.Sprintf("pod %s/%s has an invalid GPU request: %v", pod.Namespace, pod.Name, err))
	}
	s := &cycleState{req: req, overQuota: &overQuota{}, evictless: &nodeSet{}}
	state.Write(stateKey, s)
	if len(req.Containers) == 0 {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	if reason, ok := p.backoff.waiting(pod.UID); ok {
		// Unresolvable: no preemption frees what the binding lacked.
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, reason)
	}
	p.requeue.Waiting(pod, req.Request)
	p.view.JoinGang(pod)
	s.gangSuffix = gangSuffix(state, pod)
	p.tellPreempting(pod, req)
	if !p.ready() {
		// An error, not unschedulable: kube-scheduler retries the pod after
		// its back-off, where an unschedulable pod would wait for a GPU
		// event that the view's first sync does not send.
		return nil, fwk.AsStatus(errNotReady)
	}
	s.quotaAt = p.clock.Now()
	s.quota = p.rules.Quota(p.view, pod.Namespace, pod.UID, req.Request)
	if !s.quota.Unstated.OK() {
		// Not a wait for room: no room the quota gets lets the pod in.
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, string(s.quota.Unstated))
	}
	if closed := s.quota.Closed(); !closed.OK() {
		// No node has room in the quota: Filter need not run, and
		// preemption passes every node by. The requeuer hears of it here,
		// not only from PostFilter.
		s.overQuota.closeAll(s.quota.Least)
		p.requeue.OverQuota(pod, s.quotaAt, s.quota.Least)
		return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, string(closed))
	}
	if _, holding := p.view.Pod(pod.UID); holding {
		// Filter counts the GPUs it holds as free for it; the index does
		// not, so every node is filtered.
		return nil, nil
	}
	return p.narrow(pod, req.Request, len(nodes)), nil
}

// PreFilterExtensions returns the plugin, which follows the pods that
// preemption and nominated pods add to and remove from nodes.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return p }

// AddPod puts a pod on a node in this cycle's state: a pod the dry run
// removed goes back; a pod the view does not place there, such as a pod
// nominated to the node, gets the GPUs it would get now, if it fits.
func (p *Plugin) AddPod(ctx context.Context, state fwk.CycleState, preemptor *v1.Pod, info fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	added, name := info.GetPod(), nodeInfo.Node().Name
	ch := s.node(name)
	if i := slices.IndexFunc(ch.removed, func(v victim) bool { return v.uid == added.UID }); i >= 0 {
		ch.removed = slices.Delete(ch.removed, i, i+1)
		p.dryRuns.set(preemptor.UID, name, ch.removed, p.clock.Now())
		return nil
	}
	if held, ok := p.view.Pod(added.UID); ok && held.Node == name {
		return nil
	}
	req, err := p.parser.Parse(added)
	if err != nil || len(req.Containers) == 0 {
		// Not a pod that takes GPUs.
		return nil
	}
	p.view.Read([]string{name}, added.UID, func(_ string, n *view.Node) {
		if n == nil {
			return
		}
		if assignment, failure := placement.Fit(ch.apply(n, knownPods(nodeInfo)), req.Request); failure == nil {
			ch.added = append(ch.added, addedPod{uid: added.UID, holds: placement.Holds(assignment)})
		}
	})
	return nil
}

// RemovePod takes a pod off a node in this cycle's state. Only
// preemption's dry run removes pods: what it has taken off a node and not
// given back is remembered for the preemptor (see dryRuns).
func (p *Plugin) RemovePod(ctx context.Context, state fwk.CycleState, preemptor *v1.Pod, info fwk.PodInfo, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	removed, name := info.GetPod(), nodeInfo.Node().Name
	ch := s.node(name)
	for i := range ch.added {
		if ch.added[i].uid == removed.UID {
			ch.added = slices.Delete(ch.added, i, i+1)
			return nil
		}
	}
	if held, ok := p.view.Pod(removed.UID); ok && held.Node == name && !ch.isRemoved(removed.UID) {
		ch.removed = append(ch.removed, victim{uid: removed.UID, name: removed.Namespace + "/" + removed.Name})
		p.dryRuns.set(preemptor.UID, name, ch.removed, p.clock.Now())
	}
	return nil
}

// Filter fits the pod on the node's GPUs, as the view sees them with this
// cycle's changes and with the room that frees gave other pods released
// for it taken (waiters.Queue.Claimed), and then what it gets there on
// its namespace's GPU quota. A node that could not take the pod even with none of its GPUs in
// use, whose device plugin is gone, where the quota has no room for what
// the pod would get, or that runs no pod of lower priority than the pod's
// is unresolvable: preemption passes it by, and evicts no pod to make room
// in a quota. Under a backlog of pods of one priority, that spares each
// pod that finds no room kube-scheduler's dry run over every node.
func (p *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	name := nodeInfo.Node().Name
	now := p.clock.Now()
	ft := p.fitters.Get().(*placement.Fitter)
	defer p.fitters.Put(ft)
	var status *fwk.Status
	p.view.Read([]string{name}, pod.UID, func(_ string, n *view.Node) {
		if closed, _ := p.rules.Closed(n, now, s.req.Request); !closed.OK() {
			status = fwk.NewStatus(fwk.UnschedulableAndUnresolvable, string(closed))
			return
		}
		var f placement.Failure
		unclaimed := s.changes[name].apply(n, knownPods(nodeInfo))
		node, claimed := unclaimed, p.requeue.Claimed(name, pod.UID, preemption.Priority(pod))
		if len(claimed) > 0 {
			node = unclaimed.With(claimed)
		}
		if ft.Feasible(node, s.req.Request, &f) {
			if asked, over := s.quota.Exceeded(ft, node, s.req.Request); !over.OK() {
				s.overQuota.add(name, asked)
				status = fwk.NewStatus(fwk.UnschedulableAndUnresolvable, string(over))
			}
			return
		}
		code := fwk.Unschedulable
		switch {
		case f.Unresolvable:
			code = fwk.UnschedulableAndUnresolvable
		case !evictable(nodeInfo, pod):
			code = fwk.UnschedulableAndUnresolvable
			s.evictless.add(name)
		}
		why := f.Error()
		if len(claimed) > 0 && ft.Feasible(unclaimed, s.req.Request, nil) {
			why = waiters.Claimed
		}
		status = fwk.NewStatus(code, why+s.gangSuffix)
	})
	if status != nil {
		if logger := klog.FromContext(ctx).V(5); logger.Enabled() {
			logger.Info("Node does not fit the pod's GPUs", "pod", klog.KObj(pod), "node", name, "reason", status.Message())
		}
	}
	return status
}

// knownPods reports whether kube-scheduler's snapshot of the node holds a
// pod.
func knownPods(nodeInfo fwk.NodeInfo) func(types.UID) bool {
	return func(uid types.UID) bool {
		return slices.ContainsFunc(nodeInfo.GetPods(), func(p fwk.PodInfo) bool { return p.GetPod().UID == uid })
	}
}

// evictable reports whether the node runs a pod of lower priority than
// pod's, which preemption could evict.
func evictable(nodeInfo fwk.NodeInfo, pod *v1.Pod) bool {
	priority := preemption.Priority(pod)
	return slices.ContainsFunc(nodeInfo.GetPods(), func(p fwk.PodInfo) bool {
		return preemption.Priority(p.GetPod()) < priority
	})
}
