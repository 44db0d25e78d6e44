package plugin

import (
	"context"

	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/plugin/nodescore"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Score returns the node's load after placing the pod, as
// nodescore.FromLoad writes it; NormalizeScore ranks the loads by the node
// policy.
func (p *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := readState(state)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	if len(s.req.Containers) == 0 {
		return 0, nil
	}
	ft := p.fitters.Get().(*placement.Fitter)
	defer p.fitters.Put(ft)
	var load float64
	p.view.Read([]string{nodeInfo.Node().Name}, pod.UID, func(_ string, n *view.Node) {
		if n != nil {
			load, _ = ft.Load(&n.Placement, s.req.Request)
		}
	})
	return nodescore.FromLoad(load, true), nil
}

// ScoreExtensions returns the plugin, which normalises its scores.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return p }

// NormalizeScore ranks the nodes' loads by the pod's node policy, as the
// extender's prioritize does, on kube-scheduler's scale of 0 to
// MaxNodeScore.
func (p *Plugin) NormalizeScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	if len(s.req.Containers) == 0 {
		return nil
	}
	nodescore.Normalize(scores, s.req.NodePolicy)
	return nil
}
