package waiters

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// claimedNode is a node of four GPUs with what holds take added.
func claimedNode(holds []placement.Hold) []placement.Device {
	n := placement.Node{Name: "n"}
	for i := range 4 {
		n.Devices = append(n.Devices, placement.Device{UUID: fmt.Sprintf("GPU-%d", i), MemoryMiB: 1 << 20, Cores: 1 << 20, ShareLimit: 1 << 20})
	}
	return n.With(holds).Devices
}

// TestClaimsOthersCountsWhatEachOtherClaimTakes checks others against
// adding, claim by claim, the holds of the claims that count for the
// filtered pod: those of other pods, of its priority or higher, made less
// than claimFor ago. Claims come and go in a random order, as plays and
// cycles make and drop them.
func TestClaimsOthersCountsWhatEachOtherClaimTakes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	start := time.Unix(1000, 0)
	var c claims
	type made struct {
		node string
		claim
	}
	live := map[types.UID]made{}
	for step := range 2000 {
		now := start.Add(time.Duration(step) * 100 * time.Millisecond)
		uid := types.UID(fmt.Sprintf("pod-%d", rng.IntN(40)))
		node := fmt.Sprintf("node-%d", rng.IntN(3))
		if rng.IntN(3) == 0 {
			if m, ok := live[uid]; ok {
				c.drop(uid, m.node)
				delete(live, uid)
			}
		} else {
			var holds []placement.Hold
			for range 1 + rng.IntN(3) {
				holds = append(holds, placement.Hold{
					UUID: fmt.Sprintf("GPU-%d", rng.IntN(5)), MemoryMiB: int64(rng.IntN(4096)),
					Cores: int32(rng.IntN(50)), Shares: 1, Slices: uint16(1) << rng.IntN(8),
				})
			}
			priority := int32(rng.IntN(3))
			if m, ok := live[uid]; ok && m.node != node {
				c.drop(uid, m.node)
				delete(live, uid)
			}
			c.set(uid, node, holds, priority, now)
			at := now
			if m, ok := live[uid]; ok {
				at = m.at
			}
			live[uid] = made{node: node, claim: claim{holds: holds, priority: priority, at: at}}
		}
		except := types.UID(fmt.Sprintf("pod-%d", rng.IntN(40)))
		priority := int32(rng.IntN(3))
		for _, node := range []string{"node-0", "node-1", "node-2"} {
			var want []placement.Hold
			for u, m := range live {
				if m.node == node && u != except && m.priority >= priority && now.Sub(m.at) < claimFor {
					want = append(want, m.holds...)
				}
			}
			got := c.others(node, except, priority, now)
			if g, w := claimedNode(got), claimedNode(want); fmt.Sprint(g) != fmt.Sprint(w) {
				t.Fatalf("step %d, %s, except %s, priority %d: the claims take\n%v\nwant\n%v", step, node, except, priority, g, w)
			}
		}
	}
}

// TestClaimsOthersKeepsWhatItReturned checks that the holds others
// returns do not change when a claim is made or dropped after: a Filter
// may still be reading them.
func TestClaimsOthersKeepsWhatItReturned(t *testing.T) {
	now := time.Unix(1000, 0)
	var c claims
	c.set("a", "n", []placement.Hold{{UUID: "GPU-0", MemoryMiB: 100}}, 0, now)
	got := c.others("n", "x", 0, now)
	before := fmt.Sprint(got)
	c.set("b", "n", []placement.Hold{{UUID: "GPU-0", MemoryMiB: 50}}, 0, now)
	c.drop("a", "n")
	if after := fmt.Sprint(got); after != before {
		t.Fatalf("the holds returned changed from %s to %s", before, after)
	}
	if got := c.others("n", "x", 0, now); fmt.Sprint(got) != fmt.Sprint([]placement.Hold{{UUID: "GPU-0", MemoryMiB: 50}}) {
		t.Fatalf("after the changes, others = %v, want b's hold alone", got)
	}
}
