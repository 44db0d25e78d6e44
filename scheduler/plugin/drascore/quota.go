package drascore

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/plugin/cyclestate"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// quotaKey is where the plugin keeps its quotaState.
const quotaKey fwk.StateKey = Name + "/quota"

// CoresField is the field of a claim's request that states GPU compute,
// which a quota on compute requires of every request that shares a GPU.
const CoresField = "capacity.requests." + string(gpuv1alpha1.DRACapacityCores)

var (
	_ fwk.PreFilterPlugin = (*Plugin)(nil)
	_ fwk.FilterPlugin    = (*Plugin)(nil)
)

// quotaState is the GPU quota of the pod's namespace as PreFilter read it
// for the cycle's Filter calls, which only read it.
type quotaState struct {
	namespace string
	limits    quota.Limits
	// used is what the namespace's allocated claims take of the quota.
	used placement.Use
	// candidates are the pod's requests to try on each node, best first.
	candidates []*placement.Request
	// slices are every node's slices of GPUs, and consumed the capacity
	// the allocated claims consume on each GPU, allocated the devices they
	// hold whole.
	slices    map[string][]*gpuSlice
	consumed  structured.ConsumedCapacityCollection
	allocated sets.Set[structured.DeviceID]
	// seen is the namespace's quota version PreFilter read (see waiting).
	seen uint64
}

// Clone returns s, which no one changes after PreFilter.
func (s *quotaState) Clone() fwk.StateData { return s }

// PreFilter reads the GPU quota of the pod's namespace and what the
// namespace's claims already take of it, and turns the pod away when the
// least its claims ask is more than the quota leaves, or when the quota
// limits compute and a claim request shares a GPU without asking for any. A pod in a
// namespace without a GPU quota, or with no unallocated claim of
// Tessera's classes, is skipped.
func (p *Plugin) PreFilter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	p.waiting.forget(pod)
	seen := p.waiting.version(pod.Namespace)
	limits := p.quotas.Limits(pod.Namespace)
	if !limits.Enforced() {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	candidates, _, status := p.podRequests(ctx, pod)
	if !status.IsSuccess() {
		return nil, status
	}
	for _, req := range candidates {
		// Not a wait for room: no room the quota gets lets the pod in.
		if why := limits.Unstated(pod.Namespace, req.Containers, CoresField); why != "" {
			return nil, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why)
		}
	}
	s := &quotaState{namespace: pod.Namespace, limits: limits, candidates: candidates, seen: seen}
	var err error
	if s.consumed, s.allocated, err = p.consumed(ctx); err != nil {
		return nil, fwk.AsStatus(err)
	}
	slices, err := p.dra.ResourceSlices().ListWithDeviceTaintRules()
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("listing ResourceSlices: %w", err))
	}
	s.slices = p.gpus.nodeSlices(slices, nil)
	claims, err := p.dra.ResourceClaims().List()
	if err != nil {
		return nil, fwk.AsStatus(fmt.Errorf("listing ResourceClaims: %w", err))
	}
	s.used = namespaceUse(claims, p.dra.ResourceClaims(), pod.Namespace, s.slices)
	least := placement.LeastUse(candidates[0])
	for _, req := range candidates[1:] {
		least = least.Min(placement.LeastUse(req))
	}
	if why := limits.Exceeded(pod.Namespace, s.used, least); why != "" {
		return nil, p.overQuota(ctx, pod, seen, why)
	}
	state.Write(quotaKey, s)
	return nil, nil
}

// PreFilterExtensions returns nil: the quota is the namespace's, and no
// pod added to or taken from a node changes it (Tessera evicts no pod to
// make room in a quota).
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter turns the node away when the GPUs the pod's claims would get
// there, as placement picks them with the first of the pod's candidate
// requests that fits, take more than the namespace's quota leaves: a
// memory percentage, or a whole GPU, takes the memory of the GPU it gets.
// A node whose GPUs the claims do not fit is left to DynamicResources.
func (p *Plugin) Filter(ctx context.Context, state fwk.CycleState, pod *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	s, err := cyclestate.Read[*quotaState](state, quotaKey)
	if err != nil {
		return fwk.AsStatus(err)
	}
	name := nodeInfo.Node().Name
	slices, ok := s.slices[name]
	if !ok {
		return nil
	}
	w := p.scorers.Get().(*scorer)
	defer p.scorers.Put(w)
	gpuNode(&w.node, name, slices, s.consumed, s.allocated)
	for _, req := range s.candidates {
		if asked, ok := w.fitter.Use(&w.node, req); ok {
			if why := s.limits.Exceeded(s.namespace, s.used, asked); why != "" {
				return p.overQuota(ctx, pod, s.seen, why)
			}
			return nil
		}
	}
	return nil
}

// overQuota records the pod as turned away by its namespace's quota,
// which was at version seen, and returns the status that says why:
// unresolvable, since no eviction on a node makes room in a quota.
func (p *Plugin) overQuota(ctx context.Context, pod *v1.Pod, seen uint64, why string) *fwk.Status {
	if p.waiting.add(pod, seen) {
		// The quota changed since it was read: the pod may fit now.
		p.activate(ctx, "Retrying a pod its namespace's GPU quota may have room for", []*v1.Pod{pod})
	}
	return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, why)
}

// namespaceUse is what the namespace's allocated claims, those being
// allocated included, take of its GPU quota: each device of Tessera's
// driver allocated to a claim is one GPU, with the memory and cores the
// claim consumes of it, counted as placement.DeviceUse counts them on the
// GPU its slice publishes (a GPU's whole memory with no cores named is
// the GPU had alone). A claim counts once however many pods share it, and
// for as long as it is allocated: the pods' whole lives. A claim being
// allocated is in pending, not yet in its status, from the Reserve of its
// pod's cycle to the PreBind that writes it; the next pod's cycle may run
// in between.
func namespaceUse(claims []*resourceapi.ResourceClaim, pending pendingAllocations, namespace string, nodes map[string][]*gpuSlice) placement.Use {
	var u placement.Use
	for _, c := range claims {
		if c.Namespace != namespace {
			continue
		}
		a := allocation(c, pending)
		if a == nil {
			continue
		}
		for i := range a.Devices.Results {
			r := &a.Devices.Results[i]
			if r.Driver != gpuv1alpha1.DRADriverName {
				continue
			}
			// Tessera's driver names each node's pool after the node.
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if p := slicePart(nodes[r.Pool], id); p != nil {
				// An instance made on demand, at its profile's memory and
				// compute, as placement holds it.
				u = u.Add(placement.DeviceUse(p.profile.MemoryMiB, p.profile.ComputePercent, nil))
				continue
			}
			d := sliceDevice(nodes[r.Pool], id)
			var memoryMiB, cores int64
			if q, ok := r.ConsumedCapacity[gpuv1alpha1.DRACapacityMemory]; ok {
				memoryMiB = mebibytes(q)
			} else if d != nil {
				// A device allocated with no consumed capacity is the claim's whole.
				memoryMiB = d.MemoryMiB
			}
			if q, ok := r.ConsumedCapacity[gpuv1alpha1.DRACapacityCores]; ok {
				cores = max(q.Value(), 0)
			}
			u = u.Add(placement.DeviceUse(memoryMiB, int32(min(cores, 1<<30)), d))
		}
	}
	return u
}

// sliceDevice returns the GPU id names among slices, nil when none is.
func sliceDevice(slices []*gpuSlice, id structured.DeviceID) *placement.Device {
	for _, g := range slices {
		for i := range g.ids {
			if g.ids[i] == id {
				return &g.devices[i]
			}
		}
	}
	return nil
}
