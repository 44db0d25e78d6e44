package drascore

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/plugin/cyclestate"
	"github.com/tessera-gpu/tessera/scheduler/plugin/nodescore"
)

// stateKey is where the plugin keeps its cycleState.
const stateKey fwk.StateKey = Name

// cycleState is what PreScore read for the cycle's Score calls; they only
// read it.
type cycleState struct {
	// candidates are the pod's requests to try on each node, best first.
	candidates []*placement.Request
	nodePolicy gpurequest.Policy
	// slices are the candidate nodes' slices of GPUs, and consumed the
	// capacity the allocated claims consume on each GPU, allocated the
	// devices they hold whole.
	slices    map[string][]*gpuSlice
	consumed  structured.ConsumedCapacityCollection
	allocated sets.Set[structured.DeviceID]
}

// Clone returns s, which no one changes after PreScore.
func (s *cycleState) Clone() fwk.StateData { return s }

// PreScore reads the pod's request from its claims and the candidate
// nodes' GPUs and usage; a pod with no unallocated claim of Tessera's
// classes is skipped.
func (p *Plugin) PreScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodes []fwk.NodeInfo) *fwk.Status {
	candidates, nodePolicy, status := p.podRequests(ctx, pod)
	if !status.IsSuccess() {
		return status
	}
	s := &cycleState{candidates: candidates, nodePolicy: nodePolicy}
	var err error
	if s.consumed, s.allocated, err = p.consumed(ctx); err != nil {
		return fwk.AsStatus(err)
	}
	slices, err := p.dra.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("listing ResourceSlices: %w", err))
	}
	names := make(map[string]bool, len(nodes))
	for _, ni := range nodes {
		names[ni.Node().Name] = true
	}
	s.slices = p.gpus.nodeSlices(slices, names)
	state.Write(stateKey, s)
	return nil
}

// consumed is the capacity the allocated claims, and those being
// allocated, consume on each device, and the devices they hold whole.
// kube-scheduler's tracker answers an error when claims change while it
// gathers them; as DynamicResources does, it is asked again.
func (p *Plugin) consumed(ctx context.Context) (structured.ConsumedCapacityCollection, sets.Set[structured.DeviceID], error) {
	var (
		state   *structured.AllocatedState
		lastErr error
	)
	err := wait.PollUntilContextTimeout(ctx, time.Microsecond, 5*time.Second, true, func(context.Context) (bool, error) {
		state, lastErr = p.dra.ResourceClaims().GatherAllocatedState()
		return lastErr == nil && state != nil, nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("gathering the devices' consumed capacity: %w (last: %v)", err, lastErr)
	}
	return state.AggregatedCapacity, state.AllocatedDevices, nil
}

// Score returns the load the pod would leave on the node's GPUs, as
// nodescore.FromLoad writes it, with the first of its candidate requests
// that fits there; a node where none fits, or with no GPUs of Tessera's,
// scores below every other.
func (p *Plugin) Score(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	s, err := readState(state)
	if err != nil {
		return 0, fwk.AsStatus(err)
	}
	name := nodeInfo.Node().Name
	slices, ok := s.slices[name]
	if !ok {
		return nodescore.FromLoad(0, false), nil
	}
	w := p.scorers.Get().(*scorer)
	defer p.scorers.Put(w)
	gpuNode(&w.node, name, slices, s.consumed, s.allocated)
	for _, req := range s.candidates {
		if load, ok := w.fitter.Load(&w.node, req); ok {
			return nodescore.FromLoad(load, true), nil
		}
	}
	return nodescore.FromLoad(0, false), nil
}

// ScoreExtensions returns the plugin, which normalises its scores.
func (p *Plugin) ScoreExtensions() fwk.ScoreExtensions { return p }

// NormalizeScore ranks the nodes' loads by the pod's node policy.
func (p *Plugin) NormalizeScore(ctx context.Context, state fwk.CycleState, pod *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	s, err := readState(state)
	if err != nil {
		return fwk.AsStatus(err)
	}
	nodescore.Normalize(scores, s.nodePolicy)
	return nil
}

// readState returns the plugin's state of the cycle.
func readState(state fwk.CycleState) (*cycleState, error) {
	return cyclestate.Read[*cycleState](state, stateKey)
}
