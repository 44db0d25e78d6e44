package plugin

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/plugin/cyclestate"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// stateKey is where the plugin keeps its cycleState.
const stateKey fwk.StateKey = Name

// cycleState is what one scheduling cycle of a pod knows: its request,
// read once in PreFilter, the pods that preemption's dry run or the nominated
// pods put on or took off nodes, and what Reserve took.
type cycleState struct {
	req podrequest.Request
	// quota is the pod's namespace's GPU quota, read once in PreFilter
	// at quotaAt; overQuota gathers, over Filter's nodes, what it turned
	// away.
	quota     view.Quota
	quotaAt   time.Time
	overQuota *overQuota
	// evictless are the nodes Filter called unresolvable only because no
	// pod of lower priority runs there (see evictable); nil in clones,
	// whose dry runs take pods off nodes.
	evictless *nodeSet
	// changes are the pods added or removed per node by AddPod and
	// RemovePod, which change only clones of the cycle's state.
	changes map[string]*nodeChanges

	// reservedAt is when Reserve took the GPUs, zero when it did not;
	// containers are what it gave each container, and bind the
	// reservation's token (view.Reservation.Bind).
	reservedAt time.Time
	containers []gpuv1alpha1.ContainerAllocation
	bind       string
	// gang is the barrier of the pod group cycle that placed the pod: its
	// binding waits for the other pods placed with it. Nil outside one.
	gang *gangBarrier
	// gangSuffix ends the reason a node does not fit a pod tried in its
	// PodGroup's cycle (see gangSuffix); empty otherwise.
	gangSuffix string
}

// nodeChanges are the pods a dry run moved on or off one node.
type nodeChanges struct {
	// removed are pods the view places on the node, taken off it.
	removed []victim
	// added are pods the view does not place on the node (nominated pods),
	// put on it with the GPUs they would get.
	added []addedPod
}

// addedPod is a pod put on a node that the view does not place there.
type addedPod struct {
	uid   types.UID
	holds []placement.Hold
}

// nodeSet is a set of nodes that Filter, on many nodes at once, adds to.
type nodeSet struct {
	mu    sync.Mutex
	nodes map[string]bool
}

// add puts the node in the set; on a nil set it does nothing.
func (n *nodeSet) add(node string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.nodes == nil {
		n.nodes = map[string]bool{}
	}
	n.nodes[node] = true
}

// has reports whether the node is in the set.
func (n *nodeSet) has(node string) bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.nodes[node]
}

// overQuota is what a pod's namespace's GPU quota turned away in one
// scheduling cycle, whose Filter runs on many nodes at once: the nodes,
// and the least asked there. Clones of the cycle's state share it.
type overQuota struct {
	mu    sync.Mutex
	nodes map[string]bool
	// every is set when the quota had no room on any node (PreFilter).
	every      bool
	turnedAway view.TurnedAway
}

// closeAll records that the quota has room on no node for the least the
// pod asks, asked.
func (o *overQuota) closeAll(asked placement.Use) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.every = true
	o.turnedAway.Add(asked)
}

// add records that the quota turned node away, where the pod asked for
// asked.
func (o *overQuota) add(node string, asked placement.Use) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.nodes == nil {
		o.nodes = map[string]bool{}
	}
	o.nodes[node] = true
	o.turnedAway.Add(asked)
}

// read returns what the quota turned away, and whether it turned away
// node; a nil o turned none away.
func (o *overQuota) read(node string) (view.TurnedAway, bool) {
	if o == nil {
		return view.TurnedAway{}, false
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.turnedAway, o.every || o.nodes[node]
}

// notOverQuota returns the nodes the quota did not turn away, and how many
// it did.
func (s *cycleState) notOverQuota(nodes []fwk.NodeInfo) (kept []fwk.NodeInfo, over int) {
	for _, ni := range nodes {
		if _, turnedAway := s.overQuota.read(ni.Node().Name); turnedAway {
			over++
			continue
		}
		kept = append(kept, ni)
	}
	return kept, over
}

// Clone copies the changes, which AddPod and RemovePod alter; the request
// and what the quota turned away are shared.
func (s *cycleState) Clone() fwk.StateData {
	c := *s
	c.evictless = nil
	c.changes = make(map[string]*nodeChanges, len(s.changes))
	for name, ch := range s.changes {
		c.changes[name] = &nodeChanges{removed: slices.Clone(ch.removed), added: slices.Clone(ch.added)}
	}
	return &c
}

// node returns the changes of a node, creating them.
func (s *cycleState) node(name string) *nodeChanges {
	if s.changes == nil {
		s.changes = map[string]*nodeChanges{}
	}
	ch, ok := s.changes[name]
	if !ok {
		ch = &nodeChanges{}
		s.changes[name] = ch
	}
	return ch
}

// apply returns the view's node with the changes made: a copy when there
// are any. Besides the pods removed, it takes off the pods the view places
// on the node that kube-scheduler's snapshot (known) does not hold there:
// pods deleted, whose deletion the plugin's informers have not yet
// delivered to the view. Preemption's dry run must see what kube-scheduler
// sees, or a victim deleted a moment ago would still count, and another
// pod would be evicted in its place. Reserve checks the view itself, so
// nothing is over-committed if the view is right after all. apply runs
// under the view's read lock, so that the holds it takes off are those the
// view still counts.
func (ch *nodeChanges) apply(n *view.Node, known func(types.UID) bool) *placement.Node {
	if ch == nil {
		return &n.Placement
	}
	c := n.Without(func(uid types.UID) bool { return ch.isRemoved(uid) || !known(uid) })
	for _, a := range ch.added {
		c.Add(a.holds)
	}
	return c
}

// isRemoved reports whether the pod was taken off the node.
func (ch *nodeChanges) isRemoved(uid types.UID) bool {
	return slices.ContainsFunc(ch.removed, func(v victim) bool { return v.uid == uid })
}

// readState returns the plugin's state of the cycle.
func readState(state fwk.CycleState) (*cycleState, error) {
	return cyclestate.Read[*cycleState](state, stateKey)
}
