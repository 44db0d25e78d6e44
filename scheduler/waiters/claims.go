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
	byNode map[string]map[types.UID]claim
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

// set records that the pod is to take holds on node, in place of any
// claim it had there; a claim renewed keeps its time, so that a pod that
// never comes for its room keeps it from others for claimFor at most.
func (c *claims) set(uid types.UID, node string, holds []placement.Hold, priority int32, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byNode == nil {
		c.byNode = map[string]map[types.UID]claim{}
	}
	on, ok := c.byNode[node]
	if !ok {
		on = map[types.UID]claim{}
		c.byNode[node] = on
		c.nodes.Add(1)
	}
	if was, ok := on[uid]; ok {
		now = was.at
	}
	on[uid] = claim{holds: holds, priority: priority, at: now}
}

// drop forgets the pod's claim on node.
func (c *claims) drop(uid types.UID, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on, ok := c.byNode[node]; ok {
		delete(on, uid)
		if len(on) == 0 {
			delete(c.byNode, node)
			c.nodes.Add(-1)
		}
	}
}

// on returns the pods with a claim on node.
func (c *claims) on(node string) []types.UID {
	c.mu.RLock()
	defer c.mu.RUnlock()
	uids := make([]types.UID, 0, len(c.byNode[node]))
	for uid := range c.byNode[node] {
		uids = append(uids, uid)
	}
	return uids
}

// others returns what the pods other than except, of priority at least
// priority, claim on node, made less than claimFor before now.
func (c *claims) others(node string, except types.UID, priority int32, now time.Time) []placement.Hold {
	if c.nodes.Load() == 0 {
		return nil
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	var holds []placement.Hold
	for uid, cl := range c.byNode[node] {
		if uid != except && cl.priority >= priority && now.Sub(cl.at) < claimFor {
			holds = append(holds, cl.holds...)
		}
	}
	return holds
}
