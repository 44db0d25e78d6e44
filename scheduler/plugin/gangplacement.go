package plugin

import (
	"context"
	"strings"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/gangplace"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

var (
	_ fwk.PlacementGeneratePlugin  = (*Plugin)(nil)
	_ fwk.PlacementScorePlugin     = (*Plugin)(nil)
	_ fwk.PlacementScoreExtensions = (*Plugin)(nil)
)

// maxCandidates caps the placements GeneratePlacements proposes beside
// every node: kube-scheduler tries the whole gang on each of them.
const maxCandidates = 3

// GeneratePlacements proposes where kube-scheduler's pod group cycle
// tries a PodGroup's pods: on every node, as without Tessera, and, when
// the pods ask for GPUs under the binpack node policy, on each of the few
// sets of the fewest nodes that could hold all of them by their GPUs
// (gangplace.Candidates). ScorePlacement then chooses among those where
// the gang fits. A PodGroup with a topology constraint, or a composite
// one, gets the placements of kube-scheduler's own
// TopologyPlacementGenerator, which Tessera's takes the place of.
func (p *Plugin) GeneratePlacements(ctx context.Context, state fwk.PodGroupCycleState, podGroup fwk.PodGroupInfo, parent *fwk.Placement) (*fwk.GeneratePlacementsResult, *fwk.Status) {
	if pg := podGroup.GetPodGroup(); pg == nil || pg.Spec.SchedulingConstraints != nil && len(pg.Spec.SchedulingConstraints.Topology) > 0 {
		return p.topology.GeneratePlacements(ctx, state, podGroup, parent)
	}
	result := &fwk.GeneratePlacementsResult{Placements: []*fwk.Placement{{Name: "every node", Nodes: parent.Nodes}}}
	pods := podGroup.GetUnscheduledPods()
	reqs, ok := p.packable(pods)
	if !ok || !p.ready() {
		return result, nil
	}
	admits := admitters(pods)
	byName := make(map[string]fwk.NodeInfo, len(parent.Nodes))
	names := make([]string, 0, len(parent.Nodes))
	for _, ni := range parent.Nodes {
		if node := ni.Node(); node != nil && admitsAll(admits, node) {
			byName[node.Name] = ni
			names = append(names, node.Name)
		}
	}
	now := p.clock.Now()
	open := func(n *view.Node) bool {
		closed, _ := p.rules.Closed(n, now, reqs[0])
		return closed.OK()
	}
	for _, set := range gangplace.Candidates(p.view, names, reqs, open, maxCandidates) {
		pl := &fwk.Placement{Name: "fewest nodes " + strings.Join(set, ","), Nodes: make([]fwk.NodeInfo, len(set))}
		for i, name := range set {
			pl.Nodes[i] = byName[name]
		}
		result.Placements = append(result.Placements, pl)
	}
	if logger := klog.FromContext(ctx).V(4); logger.Enabled() {
		logger.Info("Proposed placements for a pod group", "podGroup", klog.KRef(podGroup.GetNamespace(), podGroup.GetName()),
			"pods", len(pods), "placements", len(result.Placements))
	}
	return result, nil
}

// packable returns the GPU requests of the pods that ask for GPUs, and
// whether the gang is Tessera's to pack: some pod asks for GPUs, every
// request is valid, and no pod asks for the spread node policy, under
// which the pods go to the emptiest nodes one by one.
func (p *Plugin) packable(pods []*v1.Pod) ([]*placement.Request, bool) {
	var reqs []*placement.Request
	for _, pod := range pods {
		req, err := p.parser.Parse(pod)
		if err != nil || req.NodePolicy == gpurequest.Spread {
			return nil, false
		}
		if len(req.Containers) > 0 {
			reqs = append(reqs, req.Request)
		}
	}
	return reqs, len(reqs) > 0
}

// admitters returns gangplace.Admits for each distinct node selection,
// affinity and tolerations among the pods: a gang's pods usually share
// them.
func admitters(pods []*v1.Pod) []func(*v1.Node) bool {
	var kept []*v1.Pod
	var out []func(*v1.Node) bool
	for _, pod := range pods {
		same := false
		for _, k := range kept {
			if apiequality.Semantic.DeepEqual(k.Spec.NodeSelector, pod.Spec.NodeSelector) &&
				apiequality.Semantic.DeepEqual(k.Spec.Affinity, pod.Spec.Affinity) &&
				apiequality.Semantic.DeepEqual(k.Spec.Tolerations, pod.Spec.Tolerations) {
				same = true
				break
			}
		}
		if !same {
			kept = append(kept, pod)
			out = append(out, gangplace.Admits(pod))
		}
	}
	return out
}

// admitsAll reports whether every one of admits lets its pods on node.
func admitsAll(admits []func(*v1.Node) bool, node *v1.Node) bool {
	for _, admit := range admits {
		if !admit(node) {
			return false
		}
	}
	return true
}

// ScorePlacement scores what placing the whole gang as the placement
// does (gangplace.Judge): more pods placed first, then fewer nodes, then
// fewer new fragments.
func (p *Plugin) ScorePlacement(ctx context.Context, state fwk.PlacementCycleState, podGroup fwk.PodGroupInfo, a *fwk.PodGroupAssignments) (int64, *fwk.Status) {
	members := make([]gangplace.Member, len(a.ProposedAssignments))
	for i, pa := range a.ProposedAssignments {
		members[i].Node = pa.GetNodeName()
		if s, err := readState(pa.GetCycleState()); err == nil {
			members[i].Request = s.req.Request
		}
	}
	e := gangplace.Judge(p.view, members)
	if logger := klog.FromContext(ctx).V(4); logger.Enabled() {
		logger.Info("Scored a pod group's placement", "podGroup", klog.KRef(podGroup.GetNamespace(), podGroup.GetName()),
			"placement", a.Name, "pods", e.Pods, "nodes", e.Nodes, "newFragments", e.Fragments)
	}
	return e.Score(), nil
}

// PlacementScoreExtensions returns the plugin, which normalises its
// placement scores.
func (p *Plugin) PlacementScoreExtensions() fwk.PlacementScoreExtensions { return p }

// NormalizePlacementScore scales the placements' scores onto
// kube-scheduler's scale, the best MaxScore and the worst MinScore.
func (p *Plugin) NormalizePlacementScore(ctx context.Context, state fwk.PodGroupCycleState, podGroup fwk.PodGroupInfo, scores []fwk.PlacementScore) *fwk.Status {
	if len(scores) == 0 {
		return nil
	}
	lo, hi := scores[0].Score, scores[0].Score
	for _, s := range scores {
		lo, hi = min(lo, s.Score), max(hi, s.Score)
	}
	for i := range scores {
		if hi == lo {
			scores[i].Score = fwk.MaxScore
			continue
		}
		scores[i].Score = fwk.MinScore + (scores[i].Score-lo)*(fwk.MaxScore-fwk.MinScore)/(hi-lo)
	}
	return nil
}
