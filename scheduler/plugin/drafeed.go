package plugin

import (
	"context"
	"math"
	"sync"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/plugin/drascore"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// draAlive is the heartbeat age the DRA fit gate's rules allow: a node
// publishes its GPUs in ResourceSlices for as long as it takes pods, and
// kube-scheduler's allocator asks for no heartbeat.
const draAlive = 100 * 365 * 24 * time.Hour

// draFeed keeps a view of the GPUs Tessera's DRA driver publishes and of
// what the allocated claims consume of them, from informer events, so
// that the fit gate's index and the requeuer work in DRA mode as in
// plugin mode. Each pool of the driver is a node of the view, named after
// the pool (the driver names each node's pool after the node), with the
// devices of its newest generation; each allocated claim is a pod of the
// view on its pool's node, holding on each device the memory and shares
// its allocation consumed. The view asks no more than kube-scheduler's
// allocator does, so that the gate never holds a pod that fits: a device
// of a MIG instance is a GPU of the instance's size and one share, whose
// whole memory the instance's allocation consumes; each GPU has one core
// more than it publishes, so that placement's rules for GPUs whose cores
// are all taken, stricter than the allocator's, never refuse what the
// allocator would give (see draRequest); allocations kube-scheduler has
// made but not yet written count once written. Each change that may make
// room plays the node for the waiting pods (waiters.Queue.Freed); a claim's
// free, once kube-scheduler's allocator has it too (see playFreed).
type draFeed struct {
	view  *view.View
	clock clock.PassiveClock
	freed func(node string)
	// tracked reports whether kube-scheduler's claim tracker, which its
	// allocator reads, still holds the claim allocated.
	tracked func(claim *resourceapi.ResourceClaim) bool

	mu sync.Mutex
	// pools are the driver's slices of each pool, by name.
	pools map[string]map[string]*resourceapi.ResourceSlice
}

func newDRAFeed(v *view.View, clk clock.PassiveClock, freed func(node string), tracked func(*resourceapi.ResourceClaim) bool) *draFeed {
	return &draFeed{view: v, clock: clk, freed: freed, tracked: tracked, pools: map[string]map[string]*resourceapi.ResourceSlice{}}
}

// trackerLag is the longest a claim's free waits for kube-scheduler's
// claim tracker to have it before its node is played anyway, and
// trackerPoll how often the tracker is asked meanwhile.
const (
	trackerLag  = 5 * time.Second
	trackerPoll = 5 * time.Millisecond
)

// trackedBy reports whether kube-scheduler's claim tracker holds the
// claim allocated.
func trackedBy(claims drascore.ClaimGetter) func(*resourceapi.ResourceClaim) bool {
	return func(claim *resourceapi.ResourceClaim) bool {
		c, err := claims.Get(claim.Namespace, claim.Name)
		return err == nil && c.UID == claim.UID && c.Status.Allocation != nil
	}
}

// sliceHandler keeps the view's nodes from the driver's ResourceSlices.
func (f *draFeed) sliceHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.setSlice(obj, false) },
		UpdateFunc: func(_, obj any) { f.setSlice(obj, false) },
		DeleteFunc: func(obj any) { f.setSlice(unwrap(obj), true) },
	}
}

// claimHandler keeps the view's pods from the allocated ResourceClaims.
func (f *draFeed) claimHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { f.setClaim(obj, false) },
		UpdateFunc: func(_, obj any) { f.setClaim(obj, false) },
		DeleteFunc: func(obj any) { f.setClaim(unwrap(obj), true) },
	}
}

// unwrap returns the last known state of a deleted object.
func unwrap(obj any) any {
	if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return tomb.Obj
	}
	return obj
}

// setSlice records a slice of the driver, or its deletion, and sets its
// pool's node again.
func (f *draFeed) setSlice(obj any, gone bool) {
	s, ok := obj.(*resourceapi.ResourceSlice)
	if !ok || s.Spec.Driver != gpuv1alpha1.DRADriverName || s.Spec.NodeName == nil {
		return
	}
	pool := s.Spec.Pool.Name
	f.mu.Lock()
	slices := f.pools[pool]
	if slices == nil {
		slices = map[string]*resourceapi.ResourceSlice{}
		f.pools[pool] = slices
	}
	if gone {
		delete(slices, s.Name)
	} else {
		slices[s.Name] = s
	}
	gn := poolNode(pool, slices)
	if len(slices) == 0 {
		delete(f.pools, pool)
	}
	f.mu.Unlock()
	if gn == nil {
		f.view.DeleteGPUNode(pool)
		f.view.DeleteLease(pool)
		return
	}
	f.view.SetGPUNode(gn)
	f.view.SetLease(pool, f.clock.Now())
	f.freed(pool)
}

// poolNode is the pool's GPUs, those of its slices of the newest
// generation, as a GPUNode of the view; nil when it has none.
func poolNode(pool string, slices map[string]*resourceapi.ResourceSlice) *gpuv1alpha1.GPUNode {
	var newest int64
	for _, s := range slices {
		newest = max(newest, s.Spec.Pool.Generation)
	}
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: pool}}
	for _, s := range slices {
		if s.Spec.Pool.Generation != newest {
			continue
		}
		for i := range s.Spec.Devices {
			gn.Status.Devices = append(gn.Status.Devices, gateDevice(pool, &s.Spec.Devices[i], len(gn.Status.Devices)))
		}
	}
	if len(gn.Status.Devices) == 0 {
		return nil
	}
	return gn
}

// gateDevice is a published device as the gate's view holds it, named by
// its pool and name: its memory, rounded down to the MiB, its cores and
// one more, and its shares; any number of cores or shares when it states
// none.
func gateDevice(pool string, d *resourceapi.Device, index int) gpuv1alpha1.GPUDevice {
	g := gpuv1alpha1.GPUDevice{
		UUID: deviceKey(pool, d.Name), Index: int32(index), Cores: math.MaxInt16,
		ShareLimit: math.MaxInt16, Health: gpuv1alpha1.GPUHealthy,
	}
	if c, ok := d.Capacity[gpuv1alpha1.DRACapacityMemory]; ok {
		g.MemoryMiB = c.Value.Value() >> 20
	}
	if c, ok := d.Capacity[gpuv1alpha1.DRACapacityCores]; ok {
		g.Cores = int32(min(c.Value.Value()+1, math.MaxInt16))
	}
	if c, ok := d.Capacity[gpuv1alpha1.DRACapacityShares]; ok {
		g.ShareLimit = int32(min(c.Value.Value(), math.MaxInt16))
	}
	if a, ok := d.Attributes[gpuv1alpha1.DRAAttributeModel]; ok && a.StringValue != nil {
		g.Model = *a.StringValue
	}
	return g
}

// deviceKey names a device of the driver in the gate's view.
func deviceKey(pool, device string) string { return pool + "/" + device }

// setClaim records what an allocated claim consumes of the driver's
// devices, or frees it when the claim is deallocated or deleted, and then
// plays its node.
func (f *draFeed) setClaim(obj any, gone bool) {
	claim, ok := obj.(*resourceapi.ResourceClaim)
	if !ok {
		return
	}
	a := claimAllocation(claim)
	if a != nil && !gone {
		f.view.Place(a)
		return
	}
	if p, ok := f.view.Release(claim.UID); ok {
		f.playFreed(claim, p.Node)
	}
}

// playFreed plays the node of a claim freed once kube-scheduler's claim
// tracker no longer holds the claim allocated. The tracker is filled by
// an informer handler of its own, which may run after this feed's: a pod
// activated for the room before then would find it taken in its cycle,
// and the room would go to the pods behind it.
func (f *draFeed) playFreed(claim *resourceapi.ResourceClaim, node string) {
	if !f.tracked(claim) {
		f.freed(node)
		return
	}
	go func() {
		// Timing out plays the node all the same.
		_ = wait.PollUntilContextTimeout(context.Background(), trackerPoll, trackerLag, false, func(context.Context) (bool, error) {
			return !f.tracked(claim), nil
		})
		f.freed(node)
	}()
}

// claimAllocation is what the claim's allocation consumes of the
// driver's devices on its first pool, as an allocation of the view: one
// container per share taken of a device, the first with the memory and
// cores consumed; nil when the claim holds none of the driver's devices.
func claimAllocation(claim *resourceapi.ResourceClaim) *gpuv1alpha1.GPUAllocation {
	if claim.Status.Allocation == nil {
		return nil
	}
	var containers []gpuv1alpha1.ContainerAllocation
	pool := ""
	for _, r := range claim.Status.Allocation.Devices.Results {
		if r.Driver != gpuv1alpha1.DRADriverName || (pool != "" && r.Pool != pool) {
			continue
		}
		pool = r.Pool
		shares := 1
		if q, ok := r.ConsumedCapacity[gpuv1alpha1.DRACapacityShares]; ok {
			shares = int(max(q.Value(), 1))
		}
		for k := range min(shares, math.MaxInt16) {
			if k == len(containers) {
				containers = append(containers, gpuv1alpha1.ContainerAllocation{Name: "share", Kind: gpuv1alpha1.ContainerApp})
			}
			d := gpuv1alpha1.DeviceAllocation{UUID: deviceKey(r.Pool, r.Device)}
			if k == 0 {
				d.MemoryMiB = floorMiB(r.ConsumedCapacity[gpuv1alpha1.DRACapacityMemory])
				cores := r.ConsumedCapacity[gpuv1alpha1.DRACapacityCores]
				d.Cores = int32(min(max(cores.Value(), 0), math.MaxInt16))
			}
			containers[k].Devices = append(containers[k].Devices, d)
		}
	}
	if len(containers) == 0 {
		return nil
	}
	return &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: claim.Name, Namespace: claim.Namespace, UID: claim.UID},
		Spec:       gpuv1alpha1.GPUAllocationSpec{PodUID: claim.UID, NodeName: pool, Containers: containers},
	}
}

// floorMiB is q bytes in MiB, rounded down.
func floorMiB(q resource.Quantity) int64 {
	return max(q.Value(), 0) >> 20
}
