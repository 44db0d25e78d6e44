package waiters

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// claimFor is how long the room a pod was activated for is kept from
// other pods' filters: longer than a pod released under a backlog waits
// in kube-scheduler's active queue behind the others released, and short
// enough that room a pod never comes for is given to others soon.
const claimFor = 30 * time.Second

// claims are the GPUs each pod activated for room on a node is to take
// there, from when a play gives it the room until its cycle ends, it is
// placed, or a later play gives the room to pods ahead of it. They have a
// lock of their own, so that Filter, which reads them on every node of
// every cycle, never waits for a play.
type claims struct {
	mu     sync.RWMutex
	byNode map[string]*nodeClaims
	// nodes counts the nodes in byNode, for others to answer at once
	// when there are none, as when the fit gate holds no pod.
	nodes atomic.Int64
}

// claim is the room one pod, of a priority, is to take on a node.
type claim struct {
	holds    []placement.Hold
	priority int32
	at       time.Time
}

// nodeClaims are the claims on one node, with what they take together:
// Filter reads them for every pod on every node, and most pods it filters
// neither claim the node nor are of a priority that some claim's pod is
// below, so it reads the sum made when the claims change.
type nodeClaims struct {
	byPod map[types.UID]claim
	// sum is every claim's holds merged, one per GPU.
	sum []placement.Hold
	// lowest is the lowest priority of a claim's pod, and oldest the
	// earliest time a claim was made.
	lowest int32
	oldest time.Time
}

// summed updates the node's sum, lowest and oldest from its claims. The
// sum is made anew: others hands the one before to Filters still reading it.
func (n *nodeClaims) summed() {
	var sum []placement.Hold
	first := true
	for _, cl := range n.byPod {
		if first || cl.priority < n.lowest {
			n.lowest = cl.priority
		}
		if first || cl.at.Before(n.oldest) {
			n.oldest = cl.at
		}
		first = false
		for _, h := range cl.holds {
			sum = merge(sum, h)
		}
	}
	n.sum = sum
}

// merge adds h to the hold on its GPU in holds, or appends it: a node
// with both holds added uses what it would with each added in turn.
func merge(holds []placement.Hold, h placement.Hold) []placement.Hold {
	for i := range holds {
		if holds[i].UUID == h.UUID {
			holds[i].MemoryMiB += h.MemoryMiB
			holds[i].Cores += h.Cores
			holds[i].Shares += h.Shares
			holds[i].Slices |= h.Slices
			return holds
		}
	}
	return append(holds, h)
}

// set records that the pod is to take holds on node, in place of any
// claim it had there; a claim renewed keeps its time, so that a pod that
// never comes for its room keeps it from others for claimFor at most.
func (c *claims) set(uid types.UID, node string, holds []placement.Hold, priority int32, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byNode == nil {
		c.byNode = map[string]*nodeClaims{}
	}
	on, ok := c.byNode[node]
	if !ok {
		on = &nodeClaims{byPod: map[types.UID]claim{}}
		c.byNode[node] = on
		c.nodes.Add(1)
	}
	if was, ok := on.byPod[uid]; ok {
		now = was.at
	}
	on.byPod[uid] = claim{holds: holds, priority: priority, at: now}
	on.summed()
}

// drop forgets the pod's claim on node.
func (c *claims) drop(uid types.UID, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	on, ok := c.byNode[node]
	if !ok {
		return
	}
	if _, ok := on.byPod[uid]; !ok {
		return
	}
	delete(on.byPod, uid)
	if len(on.byPod) == 0 {
		delete(c.byNode, node)
		c.nodes.Add(-1)
		return
	}
	on.summed()
}

// on returns the pods with a claim on node.
func (c *claims) on(node string) []types.UID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	on, ok := c.byNode[node]
	if !ok {
		return nil
	}
	uids := make([]types.UID, 0, len(on.byPod))
	for uid := range on.byPod {
		uids = append(uids, uid)
	}
	return uids
}

// others returns what the pods other than except, of priority at least
// priority, claim on node, made less than claimFor before now. The caller
// must not change the holds returned.
func (c *claims) others(node string, except types.UID, priority int32, now time.Time) []placement.Hold {
	if c.nodes.Load() == 0 {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	on, ok := c.byNode[node]
	if !ok {
		return nil
	}
	if _, mine := on.byPod[except]; !mine && on.lowest >= priority && now.Sub(on.oldest) < claimFor {
		return on.sum
	}
	var holds []placement.Hold
	for uid, cl := range on.byPod {
		if uid != except && cl.priority >= priority && now.Sub(cl.at) < claimFor {
			for _, h := range cl.holds {
				holds = merge(holds, h)
			}
		}
	}
	return holds
}
