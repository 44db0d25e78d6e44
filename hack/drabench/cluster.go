package drabench

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/dynamic-resource-allocation/structured"
)

// benchNamespace is the namespace of every claim.
const benchNamespace = "bench"

// cluster is a cluster of identical GPU nodes in one model, with claims
// already allocated by first fit, as kube-scheduler sees it when the next
// pod comes.
type cluster struct {
	model model
	// nodes are the nodes, nodeSlices each node's ResourceSlices, slices
	// all of them.
	nodes      []*corev1.Node
	nodeSlices [][]*resourceapi.ResourceSlice
	slices     []*resourceapi.ResourceSlice
	// allocated are the claims allocated so far, and tracked what
	// kube-scheduler keeps of them.
	allocated []*resourceapi.ResourceClaim
	tracked   *allocatedDevices
	// pending is the pod's claim, not yet allocated; want what the
	// allocator consumes for it of a shared device, and request the name
	// of its request.
	pending  *resourceapi.ResourceClaim
	want     map[resourceapi.QualifiedName]resource.Quantity
	request  string
	classes  classes
	celCache *cel.Cache
}

// newCluster builds nodes nodes of the model with claims claims allocated.
// What each claim consumes of a shared device is what the allocator
// itself consumes for the first one, on an empty node.
func newCluster(ctx context.Context, m model, nodes, claims int) (*cluster, error) {
	c := &cluster{
		model:      m,
		nodes:      make([]*corev1.Node, nodes),
		nodeSlices: make([][]*resourceapi.ResourceSlice, nodes),
		pending:    newClaim("pending", m.claim),
		classes:    newClasses(),
		celCache:   newCELCache(),
	}
	for i := range nodes {
		c.nodes[i] = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: nodeName(i)}}
		c.nodeSlices[i] = m.slices(nodeName(i))
		c.slices = append(c.slices, c.nodeSlices[i]...)
	}
	c.tracked = trackAllocated(nil)
	first, err := c.allocateOn(ctx, 0)
	if err != nil {
		return nil, err
	}
	if len(first) != 1 || len(first[0].Devices.Results) != 1 {
		return nil, fmt.Errorf("the %s model's claim on an empty node: got %v, want one device", m.name, first)
	}
	c.want, c.request = first[0].Devices.Results[0].ConsumedCapacity, first[0].Devices.Results[0].Request
	if c.allocated, err = firstFit(m, c.nodeSlices, c.want, c.request, claims); err != nil {
		return nil, err
	}
	c.tracked = trackAllocated(c.allocated)
	return c, nil
}

// withClaims is the cluster with only its first claims allocated: first
// fit places the first claims of many where it places them alone.
func (c *cluster) withClaims(claims int) *cluster {
	out := *c
	out.allocated = c.allocated[:claims]
	out.tracked = trackAllocated(out.allocated)
	return &out
}

// newAllocator is what the plugin's PreFilter does for each pod: gather
// the allocated state, list the slices, and build an allocator.
func (c *cluster) newAllocator(ctx context.Context) (structured.Allocator, error) {
	return c.newAllocatorFor(ctx, c.tracked.gather())
}

func (c *cluster) newAllocatorFor(ctx context.Context, state structured.AllocatedState) (structured.Allocator, error) {
	return structured.NewAllocator(ctx, schedulerFeatures(), state, c.classes, c.slices, c.celCache)
}

// filterAll is what the plugin does for one pod with
// percentageOfNodesToScore: 100: PreFilter, then Filter on every node. It
// returns on how many nodes the pod's claim fits.
func (c *cluster) filterAll(ctx context.Context) (int, error) {
	a, err := c.newAllocator(ctx)
	if err != nil {
		return 0, err
	}
	feasible := 0
	for _, n := range c.nodes {
		results, err := a.Allocate(ctx, n, c.podClaims())
		if err != nil {
			return 0, err
		}
		if results != nil {
			feasible++
		}
	}
	return feasible, nil
}

// allocateOn allocates the pending claim on the i-th node, as the plugin's
// Filter does for that node after PreFilter: nil when it does not fit.
func (c *cluster) allocateOn(ctx context.Context, i int) ([]resourceapi.AllocationResult, error) {
	a, err := c.newAllocator(ctx)
	if err != nil {
		return nil, err
	}
	return a.Allocate(ctx, c.nodes[i], c.podClaims())
}

// podClaims are the claims of the pod to schedule.
func (c *cluster) podClaims() []*resourceapi.ResourceClaim {
	return []*resourceapi.ResourceClaim{c.pending}
}

// maxPerNode bounds perNode's count, so that a fixture whose devices never
// fill fails its tests rather than hanging them.
const maxPerNode = 1 << 12

// perNode is how many claims a node holds; every node holds as many.
func (c *cluster) perNode() int {
	return fill(c.model, c.nodeSlices[0], c.want, maxPerNode, func(resourceapi.ResourceSliceSpec, resourceapi.Device) {})
}

// freeNodes are the nodes that hold no claim, the last first; fullNodes
// those with no room left.
func (c *cluster) freeNodes() []int {
	var out []int
	for n := len(c.nodes) - 1; n >= (len(c.allocated)+c.perNode()-1)/c.perNode(); n-- {
		out = append(out, n)
	}
	return out
}

func (c *cluster) fullNodes() []int {
	var out []int
	for n := range len(c.allocated) / c.perNode() {
		out = append(out, n)
	}
	return out
}

func newClaim(name string, spec resourceapi.ResourceClaimSpec) *resourceapi.ResourceClaim {
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace, UID: types.UID(uuid.NewUUID())},
		Spec:       spec,
	}
}
