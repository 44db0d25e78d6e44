package plugin

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
	"k8s.io/klog/v2"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/scheduler/fitgate"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

// draWorld is the cluster of a DRA fit gate test: the driver's slices, as
// the node daemon publishes them, and the allocated claims, fed to the
// gate's view as informer events, and kube-scheduler's allocator over the
// same objects, to say what truly fits.
type draWorld struct {
	t      *testing.T
	clock  *clocktesting.FakeClock
	view   *view.View
	feed   *draFeed
	rq     *waiters.Queue
	slices map[string]*resourceapi.ResourceSlice
	// claims are the allocated claims.
	claims map[types.UID]*resourceapi.ResourceClaim
	made   int
}

// newDRAWorld returns an empty world; signal tells the index of frees.
func newDRAWorld(t *testing.T, signal bool) *draWorld {
	clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	v := view.New()
	w := &draWorld{t: t, clock: clk, view: v, slices: map[string]*resourceapi.ResourceSlice{}, claims: map[types.UID]*resourceapi.ResourceClaim{}}
	w.rq = waiters.NewQueue(&activations{}, klog.Background(), v, clk, view.Rules{HeartbeatMaxAge: draAlive})
	freed := func(string) {}
	if signal {
		freed = w.rq.Freed
	}
	w.feed = newDRAFeed(v, clk, freed, func(*resourceapi.ResourceClaim) bool { return false })
	return w
}

// addNode publishes a node's slice with a GPU of each memory, four
// shares each.
func (w *draWorld) addNode(name string, memoryMiB ...int64) {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-slice"},
		Spec: resourceapi.ResourceSliceSpec{
			Driver: gpuv1alpha1.DRADriverName, NodeName: ptr.To(name),
			Pool: resourceapi.ResourcePool{Name: name, Generation: 1, ResourceSliceCount: 1},
		},
	}
	for i, m := range memoryMiB {
		s.Spec.Devices = append(s.Spec.Devices, dra.Device(gpuv1alpha1.GPUDevice{
			UUID: fmt.Sprintf("%s-GPU-%d", name, i), Index: int32(i), Model: "H100", MemoryMiB: m, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUHealthy,
		}))
	}
	w.slices[name] = s
	w.feed.sliceHandler().OnAdd(s, false)
}

// claimShapes are the claims the test allocates and asks about.
func claimShapes() []resourceapi.DeviceClaim {
	exact := func(count int64, memory string, extra map[resourceapi.QualifiedName]string) resourceapi.DeviceRequest {
		e := &resourceapi.ExactDeviceRequest{DeviceClassName: gpuv1alpha1.DRADriverName, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: count}
		requests := map[resourceapi.QualifiedName]resource.Quantity{}
		if memory != "" {
			requests[gpuv1alpha1.DRACapacityMemory] = resource.MustParse(memory)
		}
		for k, v := range extra {
			requests[k] = resource.MustParse(v)
		}
		if len(requests) > 0 {
			e.Capacity = &resourceapi.CapacityRequirements{Requests: requests}
		}
		return resourceapi.DeviceRequest{Name: "gpu", Exactly: e}
	}
	one := func(r resourceapi.DeviceRequest) resourceapi.DeviceClaim {
		return resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{r}}
	}
	distinct := one(exact(2, "20Gi", nil))
	distinct.Constraints = []resourceapi.DeviceConstraint{{DistinctAttribute: ptr.To(resourceapi.FullyQualifiedName(gpuv1alpha1.DRADriverName + "/" + string(gpuv1alpha1.DRAAttributeUUID)))}}
	first := exact(1, "", nil)
	first.Exactly = nil
	first.FirstAvailable = []resourceapi.DeviceSubRequest{
		{Name: "large", DeviceClassName: gpuv1alpha1.DRADriverName, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
			Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{gpuv1alpha1.DRACapacityMemory: resource.MustParse("75Gi")}}},
		{Name: "small", DeviceClassName: gpuv1alpha1.DRADriverName, AllocationMode: resourceapi.DeviceAllocationModeExactCount, Count: 1,
			Capacity: &resourceapi.CapacityRequirements{Requests: map[resourceapi.QualifiedName]resource.Quantity{gpuv1alpha1.DRACapacityMemory: resource.MustParse("35Gi")}}},
	}
	return []resourceapi.DeviceClaim{
		one(exact(1, "10Gi", nil)), one(exact(1, "30Gi", nil)), one(exact(1, "70Gi", nil)), one(exact(1, "", nil)),
		distinct, one(exact(2, "20Gi", nil)), one(first),
		one(exact(1, "10Gi", map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityCores: "100"})),
		one(exact(1, "8Gi", map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityCores: "30"})),
		one(exact(1, "", map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityCores: "50"})),
		one(exact(1, "5Gi", map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityShares: "4"})),
	}
}

// newClaim is an unallocated claim of the shape.
func (w *draWorld) newClaim(shape resourceapi.DeviceClaim) *resourceapi.ResourceClaim {
	w.made++
	name := fmt.Sprintf("claim-%d", w.made)
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec:       resourceapi.ResourceClaimSpec{Devices: shape},
	}
}

// allocator is kube-scheduler's allocator over the world as it is.
func (w *draWorld) allocator() structured.Allocator {
	state := structured.AllocatedState{
		AllocatedDevices: sets.New[structured.DeviceID](), AllocatedSharedDeviceIDs: sets.New[structured.SharedDeviceID](),
		AggregatedCapacity: structured.NewConsumedCapacityCollection(),
	}
	for _, c := range w.claims {
		for _, r := range c.Status.Allocation.Devices.Results {
			id := structured.MakeDeviceID(r.Driver, r.Pool, r.Device)
			if r.ShareID == nil {
				state.AllocatedDevices.Insert(id)
				continue
			}
			state.AllocatedSharedDeviceIDs.Insert(structured.MakeSharedDeviceID(id, r.ShareID))
			state.AggregatedCapacity.Insert(structured.NewDeviceConsumedCapacity(id, r.ConsumedCapacity))
		}
	}
	var slices []*resourceapi.ResourceSlice
	for _, s := range w.slices {
		slices = append(slices, s)
	}
	a, err := structured.NewAllocator(context.Background(), structured.Features{ConsumableCapacity: true, PrioritizedList: true},
		state, classes{}, slices, cel.NewCache(10, cel.Features{EnableConsumableCapacity: true}))
	if err != nil {
		w.t.Fatal(err)
	}
	return a
}

// allocate allocates the claim on the node, if the allocator can, and
// tells the gate.
func (w *draWorld) allocate(claim *resourceapi.ResourceClaim, node string) bool {
	results, err := w.allocator().Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, []*resourceapi.ResourceClaim{claim})
	if err != nil {
		w.t.Fatal(err)
	}
	if len(results) == 0 {
		return false
	}
	allocated := claim.DeepCopy()
	allocated.Status.Allocation = &results[0]
	w.claims[claim.UID] = allocated
	w.feed.claimHandler().OnUpdate(claim, allocated)
	return true
}

// free deallocates the claim, or deletes it, and tells the gate.
func (w *draWorld) free(uid types.UID, del bool) {
	claim := w.claims[uid]
	delete(w.claims, uid)
	if del {
		w.feed.claimHandler().OnDelete(cache.DeletedFinalStateUnknown{Key: "default/" + claim.Name, Obj: claim})
		return
	}
	freed := claim.DeepCopy()
	freed.Status.Allocation = nil
	w.feed.claimHandler().OnUpdate(claim, freed)
}

// fitsSomewhere reports whether the allocator could allocate the claim on
// some node now.
func (w *draWorld) fitsSomewhere(claim *resourceapi.ResourceClaim) bool {
	a := w.allocator()
	for node := range w.slices {
		results, err := a.Allocate(context.Background(), &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}, []*resourceapi.ResourceClaim{claim})
		if err != nil {
			w.t.Fatal(err)
		}
		if len(results) > 0 {
			return true
		}
	}
	return false
}

// walk answers Fits by fitting req on every node of the gate's view.
func (w *draWorld) walk(req *placement.Request) bool {
	fits := false
	now := w.clock.Now()
	rules := view.Rules{HeartbeatMaxAge: draAlive}
	w.view.Each(func(n *view.Node) {
		if closed, _ := rules.Closed(n, now, req); closed.OK() {
			if _, f := placement.Fit(&n.Placement, req); f == nil {
				fits = true
			}
		}
	}, nil)
	return fits
}

// gateRequest is the gate's request for a pod with the claim.
func (w *draWorld) gateRequest(claim *resourceapi.ResourceClaim) *placement.Request {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod-" + claim.Name, Namespace: "default", UID: types.UID("pod-" + claim.Name)},
		Spec:       v1.PodSpec{ResourceClaims: []v1.PodResourceClaim{{Name: "gpus", ResourceClaimName: ptr.To(claim.Name)}}},
	}
	req, ok := draRequest(pod, claimList{claim}, []string{gpuv1alpha1.DRADriverName})
	if !ok {
		w.t.Fatalf("no gate request for claim %+v", claim.Spec)
	}
	return req
}

// TestDRAIndexMatchesWalk takes random steps (nodes published, claims
// allocated by kube-scheduler's allocator, deallocated and deleted) and
// after each asks, for a few claims, whether the gate would hold a pod
// with it: the index's answer must match a walk over every node of the
// gate's view, and the gate must never hold a claim the allocator could
// allocate on some node. The same steps without the free signal must
// disagree with the walk, or the check could not fail.
func TestDRAIndexMatchesWalk(t *testing.T) {
	const steps = 600
	held, step, ok := draDisagreement(t, steps, true)
	if ok {
		t.Fatalf("the DRA gate's index and the walk disagree at step %d", step)
	}
	if held == 0 {
		t.Fatal("the gate never held a claim: the steps never filled the nodes")
	}
	t.Logf("the gate held %d of the claims asked about, each while no node could allocate it", held)
	if _, _, ok := draDisagreement(t, steps, false); !ok {
		t.Fatal("without the free signal the index still agrees with the walk: the check cannot fail")
	}
}

// TestDRAFreePlayedOnceKubeSchedulerHasIt frees a claim that
// kube-scheduler's claim tracker still holds allocated: its node is
// played only once the tracker lets the claim go, so that a pod
// activated for the room finds it free in its cycle.
func TestDRAFreePlayedOnceKubeSchedulerHasIt(t *testing.T) {
	w := newDRAWorld(t, false)
	var tracked atomic.Bool
	played := make(chan string, 4)
	w.feed = newDRAFeed(w.view, w.clock, func(node string) { played <- node }, func(*resourceapi.ResourceClaim) bool { return tracked.Load() })
	w.addNode("n0", 81920)
	if node := <-played; node != "n0" {
		t.Fatalf("publishing n0 played %q", node)
	}
	claim := w.newClaim(claimShapes()[0])
	if !w.allocate(claim, "n0") {
		t.Fatal("the allocator did not allocate the claim")
	}
	tracked.Store(true)
	w.free(claim.UID, false)
	select {
	case node := <-played:
		t.Fatalf("played %q while kube-scheduler still held the claim allocated", node)
	case <-time.After(100 * time.Millisecond):
	}
	tracked.Store(false)
	select {
	case node := <-played:
		if node != "n0" {
			t.Fatalf("the free played %q, want n0", node)
		}
	case <-time.After(trackerLag):
		t.Fatal("the free was never played")
	}
}

// draDisagreement takes random steps and returns the first at which the
// gate disagrees with the walk; it fails the test when the gate holds a
// claim that fits. held counts the claims the gate held.
func draDisagreement(t *testing.T, steps int, signal bool) (held, step int, disagree bool) {
	rng := rand.New(rand.NewPCG(1, 1))
	w := newDRAWorld(t, signal)
	shapes := claimShapes()
	var nodes []string
	memories := []int64{24576, 40960, 81920}
	for step := range steps {
		switch r := rng.IntN(10); {
		case r == 0 && len(nodes) < 4 || len(nodes) == 0:
			name := fmt.Sprintf("n%d", len(nodes))
			m := memories[rng.IntN(len(memories))]
			w.addNode(name, m, m, 81920, 81920)
			nodes = append(nodes, name)
		case r < 8:
			w.allocate(w.newClaim(shapes[rng.IntN(len(shapes))]), nodes[rng.IntN(len(nodes))])
		case len(w.claims) > 0:
			for uid := range w.claims {
				w.free(uid, rng.IntN(2) == 0)
				break
			}
		}
		for range 2 {
			claim := w.newClaim(shapes[rng.IntN(len(shapes))])
			req := w.gateRequest(claim)
			fits, _ := w.rq.Index().Fits(fitgate.ShapeKey(req), req)
			if fits != w.walk(req) {
				return held, step, true
			}
			if !fits && w.fitsSomewhere(claim) {
				t.Fatalf("step %d: the gate holds claim %+v, which the allocator can allocate", step, claim.Spec.Devices)
			}
			if !fits {
				held++
			}
		}
	}
	return held, 0, false
}

// classes lists Tessera's DeviceClass.
type classes struct{}

func (classes) List() ([]*resourceapi.DeviceClass, error) {
	c, _ := classes{}.Get(gpuv1alpha1.DRADriverName)
	return []*resourceapi.DeviceClass{c}, nil
}

func (classes) Get(name string) (*resourceapi.DeviceClass, error) {
	if name != gpuv1alpha1.DRADriverName {
		return nil, fmt.Errorf("no class %s", name)
	}
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: `device.driver == "` + gpuv1alpha1.DRADriverName + `"`},
		}}},
	}, nil
}

// claimList is a claim getter over a few claims, none being allocated.
type claimList []*resourceapi.ResourceClaim

func (l claimList) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	for _, c := range l {
		if c.Namespace == namespace && c.Name == name {
			return c, nil
		}
	}
	return nil, fmt.Errorf("no claim %s/%s", namespace, name)
}

func (claimList) GetPendingAllocation(types.UID) *resourceapi.AllocationResult { return nil }
