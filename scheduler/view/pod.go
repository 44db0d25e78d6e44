package view

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// Pod is what one pod holds on one node. It is keyed by the pod's UID, so
// the reservation a bind makes and the GPUAllocation the informer later
// delivers for the same pod replace each other instead of adding up.
type Pod struct {
	// UID, Namespace and Name identify the pod.
	UID       types.UID
	Namespace string
	Name      string
	// Node is the node the pod's GPUs are on.
	Node string
	// Containers are the GPUs given to each container.
	Containers []gpuv1alpha1.ContainerAllocation
	// Reserved is true while the hold comes from a bind in progress, before
	// its GPUAllocation has been seen.
	Reserved bool
	// AllocationUID is the UID of the GPUAllocation the hold comes from;
	// empty for a reservation.
	AllocationUID types.UID
	// Since is when the hold was made.
	Since time.Time
	// Gang is, for room held for a gang's pods not yet created, the
	// gang's key (see HoldGang); UID and Name are then the hold's own.
	Gang string

	holds []placement.Hold
	// use is what the pod holds of its namespace's GPU quota, counted
	// when it was added to the view, so that releasing it takes off
	// exactly that.
	use placement.Use
	// bind is, for a reservation, the token of its bind (Reservation.Bind),
	// which the allocation that bind writes carries.
	bind string
	// shadow is, for a reservation, what the pod held before it: the
	// allocation another bind left, placed as Place would place it, or the
	// reservation of a bind whose outcome is unknown. The reservation's
	// bind replaces it or, failing, gives it back (ReleaseReservation).
	shadow *Pod
	// took is, for a gang member whose bind took a hold of its gang (see
	// takeHold) and was not seen made (View.Bound), that hold, and gang
	// that gang, so that the room freed unplaced goes back to the gang.
	took *Pod
	gang *gang
}

// newPod builds a pod's hold from its containers' allocations.
func newPod(uid types.UID, namespace, name, node string, containers []gpuv1alpha1.ContainerAllocation, since time.Time, reserved bool) *Pod {
	return &Pod{
		UID:        uid,
		Namespace:  namespace,
		Name:       name,
		Node:       node,
		Containers: containers,
		Reserved:   reserved,
		Since:      since,
		holds:      placement.Holds(containers),
	}
}

// Holds returns what the pod holds on each of its GPUs. The result must not
// be changed.
func (p *Pod) Holds() []placement.Hold { return p.holds }

// Use returns what the pod holds of its namespace's GPU quota.
func (p *Pod) Use() placement.Use { return p.use }
