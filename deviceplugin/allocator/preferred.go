package allocator

import (
	"context"
	"slices"

	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/vdevice"
)

// Preferred steers the kubelet's choice of virtual devices to the physical
// GPUs the scheduler placed for the next unserved container(s), so that the
// kubelet's records agree with the GPUAllocation. It never fails: without an
// allocation it answers with the first available devices, and Allocate
// reports the problem.
func (a *Allocator) Preferred(ctx context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	logger := klog.FromContext(ctx)
	// One read at most: the kubelet calls Allocate next, which waits for a
	// late allocation and reports a missing one.
	admit, err := a.admitting(ctx)
	var alloc *gpuv1alpha1.GPUAllocation
	if err == nil {
		alloc = a.findInFlightHeld(ctx, admit)
	}
	if alloc == nil && err == nil {
		alloc, err = a.findInFlightLive(ctx, 0, admit)
	}
	var wanted [][]string
	if err != nil {
		logger.Info("No allocation to steer the kubelet's device choice", "err", err)
	} else {
		for _, c := range unserved(alloc, a.kubeletAsks(a.cachedPod(alloc))) {
			uuids := make([]string, 0, len(c.Devices))
			for _, d := range c.Devices {
				uuids = append(uuids, d.UUID)
			}
			wanted = append(wanted, uuids)
		}
	}
	resp := &pluginapi.PreferredAllocationResponse{}
	for i, creq := range req.ContainerRequests {
		var want []string
		if i < len(wanted) {
			want = wanted[i]
		}
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{
			DeviceIDs: choose(creq.AvailableDeviceIDs, creq.MustIncludeDeviceIDs, int(creq.AllocationSize), want),
		})
	}
	return resp, nil
}

// choose returns size devices: those that must be included, then one
// available device of each wanted GPU not yet covered, then any available
// devices, lowest first.
func choose(available, mustInclude []string, size int, wantUUIDs []string) []string {
	var chosen []string
	covered := map[string]bool{}
	add := func(id string) {
		if len(chosen) >= size || slices.Contains(chosen, id) {
			return
		}
		chosen = append(chosen, id)
		if uuid, _, ok := vdevice.Parse(id); ok {
			covered[uuid] = true
		}
	}
	for _, id := range mustInclude {
		add(id)
	}
	sorted := slices.Clone(available)
	vdevice.Sort(sorted)
	for _, uuid := range wantUUIDs {
		if covered[uuid] {
			continue
		}
		for _, id := range sorted {
			if u, _, ok := vdevice.Parse(id); ok && u == uuid && !slices.Contains(chosen, id) {
				add(id)
				break
			}
		}
	}
	for _, id := range sorted {
		add(id)
	}
	return chosen
}
