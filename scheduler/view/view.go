package view

import (
	"crypto/rand"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// View is the extender's in-memory picture of every GPU and what holds it.
// It is safe for concurrent use.
type View struct {
	mu    sync.RWMutex
	nodes map[string]*Node
	pods  map[types.UID]*Pod
	// generation changes whenever a node is added to or removed from
	// nodes, or moved by arrange, so that a Lookup knows its nodes are
	// still the view's.
	generation uint64
	// arranged is the generation that arrange made, to arrange the nodes
	// once per change.
	arranged uint64
	// leases are when the nodes' Leases were last seen renewed, by the
	// scheduler's clock (liveness.Renewals), by node name, in Unix
	// nanoseconds. A node shares its Lease's, so that a renewal, many
	// a second in a large cluster, takes no write lock.
	leases map[string]*atomic.Int64
	// usage is what each namespace's pods hold of its GPU quota.
	usage namespaceUse
	// gangs are the room held for gangs' pods, by the gangs' keys, and
	// members the gang of each of their pods seen so far, by UID.
	gangs   map[string]*gang
	members map[types.UID]*gang
}

// New returns an empty view.
func New() *View {
	return &View{nodes: map[string]*Node{}, pods: map[types.UID]*Pod{}, leases: map[string]*atomic.Int64{}}
}

// SetGPUNode records a GPUNode's devices, cordons and readiness, and
// re-applies the holds of the pods on the node.
func (v *View) SetGPUNode(gn *gpuv1alpha1.GPUNode) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.node(gn.Name)
	n.Placement = placement.NewNode(gn, n.Placement.Devices)
	n.HasGPUNode = true
	n.NotReady = ""
	if c := meta.FindStatusCondition(gn.Status.Conditions, gpuv1alpha1.GPUNodeReady); c != nil && c.Status != metav1.ConditionTrue {
		n.NotReady = c.Reason
		if c.Message != "" {
			n.NotReady = c.Message
		}
		if n.NotReady == "" {
			n.NotReady = "Ready condition is " + string(c.Status)
		}
	}
	n.NoHAMiCore, _ = NoHAMiCore(gn)
	n.rebuild()
	v.recount(n)
}

// NoHAMiCore reports whether the GPUNode says its HAMi-core library is
// missing, and why. A node that publishes no HAMi-core condition, or one
// not yet known, is not held back for it.
func NoHAMiCore(gn *gpuv1alpha1.GPUNode) (string, bool) {
	c := meta.FindStatusCondition(gn.Status.Conditions, gpuv1alpha1.GPUNodeHAMiCoreReady)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != gpuv1alpha1.HAMiCoreLibraryMissing {
		return "", false
	}
	return c.Message, true
}

// SetLease records when the node's Lease, its device plugin's heartbeat,
// was last seen renewed, by the scheduler's clock, and returns what it
// recorded before: zero when the node had no Lease.
func (v *View) SetLease(name string, renewed time.Time) (before time.Time) {
	v.mu.RLock()
	l := v.leases[name]
	v.mu.RUnlock()
	if l == nil {
		v.mu.Lock()
		if l = v.leases[name]; l == nil {
			l = new(atomic.Int64)
			v.leases[name] = l
			if n, ok := v.nodes[name]; ok {
				n.renewed = l
			}
		}
		v.mu.Unlock()
	}
	return unixNano(l.Swap(renewed.UnixNano()))
}

// DeleteLease forgets a node's Lease: the node has no heartbeat until a
// new one appears.
func (v *View) DeleteLease(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	delete(v.leases, name)
	if n, ok := v.nodes[name]; ok {
		n.renewed = new(atomic.Int64)
	}
}

// DeleteGPUNode takes a node's GPUs out of the view. Pods still holding
// GPUs there keep their holds, so they count again if the GPUNode returns.
func (v *View) DeleteGPUNode(name string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	n, ok := v.nodes[name]
	if !ok {
		return
	}
	n.Placement = placement.Node{Name: name, Devices: n.Placement.Devices[:0]}
	n.HasGPUNode = false
	n.NotReady = ""
	n.NoHAMiCore = ""
	v.forgetIfEmpty(name, n)
}

// Place records the GPUs a GPUAllocation gives its pod. It replaces what
// the pod held before, such as the reservation of the bind that wrote the
// allocation, so nothing is counted twice. While the pod holds the
// reservation of another bind, which writes an allocation of its own in
// this one's place or else gives this one back, the allocation is only
// remembered (see ReleaseReservation): a pod whose bind was cut short can
// be reserved again before its allocation is seen, and counting that
// allocation in the new reservation's place would free room the new bind
// is about to take.
func (v *View) Place(a *gpuv1alpha1.GPUAllocation) {
	v.mu.Lock()
	defer v.mu.Unlock()
	uid := a.Spec.PodUID
	old, ok := v.pods[uid]
	switch {
	case ok && old.AllocationUID == a.UID && old.Node == a.Spec.NodeName:
		// A GPUAllocation's spec is immutable: an update is a status change.
		return
	case ok && old.Reserved && !ownAllocation(old, a):
		v.setShadow(old, placed(a))
		return
	}
	v.replace(old, a)
}

// PlaceOverReservation records the GPUs a GPUAllocation gives its pod in
// place of the pod's reservation made at since, whichever bind wrote the
// allocation: for a reservation whose bind is over. It does nothing and
// returns false when the pod no longer holds that reservation.
func (v *View) PlaceOverReservation(a *gpuv1alpha1.GPUAllocation, since time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.pods[a.Spec.PodUID]
	if !ok || !p.Reserved || !p.Since.Equal(since) {
		return false
	}
	v.replace(p, a)
	return true
}

// replace puts the allocation's holds in place of old, what the pod held
// (nil for nothing).
func (v *View) replace(old *Pod, a *gpuv1alpha1.GPUAllocation) {
	p := placed(a)
	v.release(a.Spec.PodUID)
	if old != nil {
		// The bind that took a hold of the pod's gang may still fail.
		p.took, p.gang = old.took, old.gang
	}
	v.add(p)
}

// placed is the hold a GPUAllocation gives its pod.
func placed(a *gpuv1alpha1.GPUAllocation) *Pod {
	p := newPod(a.Spec.PodUID, a.Namespace, a.Name, a.Spec.NodeName, a.Spec.Containers, a.CreationTimestamp.Time, false)
	p.AllocationUID = a.UID
	return p
}

// ownAllocation reports whether the allocation is the one the
// reservation's bind wrote.
func ownAllocation(r *Pod, a *gpuv1alpha1.GPUAllocation) bool {
	return a.Annotations[gpuv1alpha1.BindAnnotation] == r.bind
}

// setShadow replaces the reservation r with a copy that remembers shadow,
// since readers may hold r.
func (v *View) setShadow(r, shadow *Pod) {
	c := *r
	c.shadow = shadow
	v.pods[r.UID] = &c
	v.nodes[r.Node].pods[r.UID] = &c
}

// ReleaseAllocation frees what a GPUAllocation gave its pod: the holds
// recorded from it, or the reservation of the bind that wrote it. It does
// nothing when the pod holds GPUs through something else, such as the
// reservation of a bind that replaced the allocation; that reservation
// then no longer gives it back.
func (v *View) ReleaseAllocation(a *gpuv1alpha1.GPUAllocation) (*Pod, bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.pods[a.Spec.PodUID]
	if !ok {
		return nil, false
	}
	if p.Reserved && !ownAllocation(p, a) {
		if s := p.shadow; s != nil && (s.AllocationUID == a.UID || s.Reserved && ownAllocation(s, a)) {
			v.setShadow(p, nil)
		}
		return nil, false
	}
	if !p.Reserved && p.AllocationUID != a.UID {
		return nil, false
	}
	v.release(a.Spec.PodUID)
	v.giveBack(p)
	return p, true
}

// ReleaseReservation drops a bind's reservation made at since, if the pod
// still holds GPUs through it. A gang member's room goes back to the gang
// (see giveBack), as it does when ReleaseAllocation or Release frees it.
// An allocation of the pod that the bind was to replace comes back in the
// reservation's place: it holds its GPUs until it is deleted.
func (v *View) ReleaseReservation(uid types.UID, since time.Time) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	p, ok := v.pods[uid]
	if !ok || !p.Reserved || !p.Since.Equal(since) {
		return false
	}
	v.release(uid)
	v.giveBack(p)
	if p.shadow != nil {
		v.add(p.shadow)
	}
	return true
}

// Release frees whatever the pod holds and returns it; ok is false when it
// held nothing.
func (v *View) Release(uid types.UID) (p *Pod, ok bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if p, ok = v.release(uid); ok {
		v.giveBack(p)
	}
	return p, ok
}

// FitFunc decides a pod's placement on a node, or says why there is none.
type FitFunc func(n *Node) ([]gpuv1alpha1.ContainerAllocation, error)

// Reserve places a pod on a node as fit decides, atomically with respect
// to every other change of the view. What the pod held before is not
// counted while fit runs, and is replaced when fit succeeds; replaced
// returns it. When fit fails, the view is left as it was.
func (v *View) Reserve(uid types.UID, namespace, name, nodeName string, now time.Time, fit FitFunc) (containers []gpuv1alpha1.ContainerAllocation, replaced *Pod, err error) {
	r, err := v.ReserveWithin(quota.Limits{}, uid, namespace, name, nodeName, now, fit)
	return r.Containers, r.Replaced, err
}

// Reservation is what ReserveWithin reserved.
type Reservation struct {
	// Containers are the GPUs fit gave the pod.
	Containers []gpuv1alpha1.ContainerAllocation
	// Replaced is what the pod held before; nil when nothing.
	Replaced *Pod
	// HoldFreed is the node where the pod's gang gave up a hold because
	// the pod was placed on another node; empty when none was.
	HoldFreed string
	// Bind is the reservation's token, which the allocation its bind
	// writes carries in gpuv1alpha1.BindAnnotation.
	Bind string
}

// ReserveWithin is Reserve within the namespace's GPU limits: what fit
// gives the pod, as the quota counts it (placement.UseOf), must fit beside
// what the namespace's other pods hold, or nothing is reserved and the
// error is a *quota.ExceededError. A pod of a gang (JoinGang) is fitted
// as if its gang's hold on the node were free, and takes its place. The check and the reservation are one
// step under the view's lock, so two pods of a namespace reserved at once,
// on any nodes, never both pass a limit that has room for one.
func (v *View) ReserveWithin(limits quota.Limits, uid types.UID, namespace, name, nodeName string, now time.Time, fit FitFunc) (Reservation, error) {
	// Drawn before the lock: it asks the kernel for randomness.
	bind := rand.Text()
	v.mu.Lock()
	defer v.mu.Unlock()
	n := v.node(nodeName)
	old, hadOld := v.pods[uid]
	sameNode := hadOld && old.Node == nodeName
	if sameNode {
		n.Placement.Remove(old.holds)
	}
	held := v.heldFor(uid, nodeName)
	if held != nil {
		n.Placement.Remove(held.holds)
	}
	containers, err := fit(n)
	if err == nil && limits.Enforced() {
		err = limits.Check(namespace, v.usedWithout(namespace, uid), placement.UseOf(containers, &n.Placement))
	}
	if held != nil {
		n.Placement.Add(held.holds)
	}
	if err != nil {
		if sameNode {
			n.Placement.Add(old.holds)
		}
		v.forgetIfEmpty(nodeName, n)
		return Reservation{}, err
	}
	r := Reservation{Containers: containers}
	// The pod takes its gang's hold here, or gives up one elsewhere.
	g := v.members[uid]
	took := v.takeHold(uid, held)
	if took != nil && took.Node != nodeName {
		r.HoldFreed = took.Node
	}
	if hadOld {
		if sameNode {
			// Its holds are off the node already.
			delete(n.pods, uid)
			delete(v.pods, uid)
			v.usage.sub(old.Namespace, old.use)
		} else {
			v.release(uid)
		}
		r.Replaced = old
	}
	p := newPod(uid, namespace, name, nodeName, containers, now, true)
	switch {
	case took != nil:
		p.took, p.gang = took, g
		g.reserved[uid] = struct{}{}
	case hadOld:
		// The pod's bind that took the hold has not been seen made.
		p.took, p.gang = old.took, old.gang
	}
	p.bind = bind
	if hadOld {
		// The bind replaces what the pod held, or gives it back: an
		// allocation, or the reservation of a bind whose binding's answer
		// was lost (commit.ErrAllocationKept), which may have bound the
		// pod on it; that reservation keeps what it would give back.
		shadow := *old
		shadow.took, shadow.gang = nil, nil
		p.shadow = &shadow
	}
	v.add(p)
	r.Bind = p.bind
	return r, nil
}

func (v *View) node(name string) *Node {
	n, ok := v.nodes[name]
	if !ok {
		n = &Node{Placement: placement.Node{Name: name}, pods: map[types.UID]*Pod{}, renewed: v.leases[name]}
		if n.renewed == nil {
			n.renewed = new(atomic.Int64)
		}
		v.nodes[name] = n
		v.generation++
	}
	return n
}

func (v *View) add(p *Pod) {
	n := v.node(p.Node)
	n.pods[p.UID] = p
	n.Placement.Add(p.holds)
	v.pods[p.UID] = p
	p.use = placement.UseOf(p.Containers, &n.Placement)
	v.usage.add(p.Namespace, p.use)
}

func (v *View) release(uid types.UID) (*Pod, bool) {
	p, ok := v.pods[uid]
	if !ok {
		return nil, false
	}
	delete(v.pods, uid)
	v.usage.sub(p.Namespace, p.use)
	if n, ok := v.nodes[p.Node]; ok {
		n.Placement.Remove(p.holds)
		delete(n.pods, uid)
		v.forgetIfEmpty(p.Node, n)
	}
	return p, true
}

func (v *View) forgetIfEmpty(name string, n *Node) {
	if !n.HasGPUNode && len(n.pods) == 0 {
		delete(v.nodes, name)
		v.generation++
	}
}
