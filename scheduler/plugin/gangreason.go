package plugin

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"
)

var _ fwk.PodGroupPostFilterPlugin = (*Plugin)(nil)

// gangProgressKey is where the plugin keeps, in a PodGroup's cycle state,
// how many of the group's pods fit.
const gangProgressKey fwk.StateKey = Name + "/gang"

// gangProgress counts the members of a PodGroup that Reserve took room for
// in one group cycle. With several placements tried one after another,
// fit counts the current placement's and most the best placement's.
type gangProgress struct {
	placement fwk.PlacementCycleState
	fit, most int
}

// Clone shares the count: the group's pods are tried one after another
// and each adds to it.
func (g *gangProgress) Clone() fwk.StateData { return g }

// readGangProgress is the progress of the pod group cycle the pod's cycle
// belongs to, created if need be; nil outside a group cycle.
func readGangProgress(state fwk.CycleState) *gangProgress {
	if !state.IsPodGroupSchedulingCycle() {
		return nil
	}
	group := state.GetPodGroupSchedulingCycle()
	if group == nil {
		return nil
	}
	data, err := group.Read(gangProgressKey)
	if g, ok := data.(*gangProgress); err == nil && ok {
		return g
	}
	g := &gangProgress{}
	group.Write(gangProgressKey, g)
	return g
}

// placed returns how many of the group's pods fit so far in the placement
// the pod's cycle tries.
func (g *gangProgress) placed(state fwk.CycleState) int {
	if g.placement != state.GetPlacementCycleState() {
		return 0
	}
	return g.fit
}

// reserved counts one more pod of the group that fits in the placement
// the pod's cycle tries.
func (g *gangProgress) reserved(state fwk.CycleState) {
	g.fit = g.placed(state) + 1
	g.placement = state.GetPlacementCycleState()
	g.most = max(g.most, g.fit)
}

// gangReserved counts the pod as fitting, if it is tried in its PodGroup's
// cycle.
func gangReserved(state fwk.CycleState) {
	if g := readGangProgress(state); g != nil {
		g.reserved(state)
	}
}

// gangSuffix is what the plugin adds to the reason a node does not fit a
// pod tried in its PodGroup's cycle, so that the pod's FailedScheduling
// event names the gang and how many of its pods took room before it;
// empty outside a group cycle.
func gangSuffix(state fwk.CycleState, pod *v1.Pod) string {
	g := readGangProgress(state)
	if g == nil || pod.Spec.SchedulingGroup == nil {
		return ""
	}
	return fmt.Sprintf(" for gang %s with %d of its pods placed", ptr.Deref(pod.Spec.SchedulingGroup.PodGroupName, ""), g.placed(state))
}

// PodGroupPostFilter runs after a PodGroup's cycle found no room for its
// gang. It makes no room; it names the gang, how many pods it needs at
// once and how many fit, in a FailedScheduling event on each of the
// gang's pods and in its status, which kube-scheduler adds to the reason
// those pods are given unless a later PodGroupPostFilter (DefaultPreemption,
// finding nothing to evict) ends the list.
func (p *Plugin) PodGroupPostFilter(ctx context.Context, state fwk.PodGroupCycleState, pgInfo fwk.PodGroupInfo, _ fwk.PodGroupSchedulingFunc) (*fwk.PodGroupPostFilterResult, *fwk.Status) {
	pg := pgInfo.GetPodGroup()
	if pg == nil || pg.Spec.SchedulingPolicy.Gang == nil {
		return nil, fwk.NewStatus(fwk.Unschedulable)
	}
	most := 0
	if data, err := state.Read(gangProgressKey); err == nil {
		if g, ok := data.(*gangProgress); ok {
			most = g.most
		}
	}
	reason := gangReason(pgInfo.GetName(), int(pg.Spec.SchedulingPolicy.Gang.MinCount), most)
	if p.recorder != nil {
		for _, pod := range pgInfo.GetUnscheduledPods() {
			p.recorder.Eventf(pod, nil, v1.EventTypeWarning, "FailedScheduling", "Scheduling", "%s", reason)
		}
	}
	return nil, fwk.NewStatus(fwk.Unschedulable, reason)
}

// gangReason says that a gang needs room for need pods at once and found
// it for fit.
func gangReason(name string, need, fit int) string {
	return fmt.Sprintf("gang %s: %d pods need room, %d fit", name, need, fit)
}
