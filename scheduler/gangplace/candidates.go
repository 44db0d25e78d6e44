package gangplace

import (
	"cmp"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// room is what one node could hold of a gang, its pods placed on it one
// beside another.
type room struct {
	name string
	// holds is how many of the gang's pods fit on the node together.
	holds int
	// fragments is how many more partly held GPUs the node has with them
	// than without; leftMiB is the GPU memory it has left free with them.
	fragments int
	leftMiB   int64
}

// Candidates returns up to limit sets of nodes, among names, each as few
// nodes as can hold all of reqs (a gang's pods' GPU requests, in the
// order kube-scheduler tries them) together, best first: when one node
// holds the gang, the single nodes it leaves with the fewest new
// fragments and the least memory free; otherwise the nodes that hold the
// most of it, and the same with the last one swapped for the node that
// holds the rest most tightly. Only the nodes open says the gang may use
// are counted. It returns nil when the nodes together cannot hold the
// gang as they are.
//
// Its cost is one placement of each pod on each open node, stopping at a
// node once all fit: at most len(names) x len(reqs) placements, under the
// view's read lock.
func Candidates(v *view.View, names []string, reqs []*placement.Request, open func(n *view.Node) bool, limit int) [][]string {
	rooms := measure(v, names, reqs, open)
	return choose(rooms, len(reqs), limit)
}

// measure finds what each open node could hold of the gang.
func measure(v *view.View, names []string, reqs []*placement.Request, open func(n *view.Node) bool) []room {
	var rooms []room
	var ft placement.Fitter
	none := func(types.UID) bool { return false }
	alike := uniform(reqs)
	v.Read(names, "", func(name string, n *view.Node) {
		if n == nil || !n.HasGPUNode || !open(n) {
			return
		}
		c := n.Without(none)
		before := c.Fragments()
		var holds int
		if alike {
			// Where one pod no longer fits, none of the others does.
			for holds < len(reqs) && ft.Pack(c, reqs[holds:holds+1], 1) == 1 {
				holds++
			}
		} else {
			holds = ft.Pack(c, reqs, len(reqs))
		}
		if holds == 0 {
			return
		}
		rooms = append(rooms, room{name: name, holds: holds, fragments: c.Fragments() - before, leftMiB: c.FreeMemoryMiB()})
	})
	return rooms
}

// uniform reports whether the pods all ask for the same, as a gang's
// pods made from one template do.
func uniform(reqs []*placement.Request) bool {
	for _, r := range reqs[1:] {
		if !reflect.DeepEqual(r, reqs[0]) {
			return false
		}
	}
	return true
}

// choose picks up to limit sets of the fewest rooms that together hold
// size pods.
func choose(rooms []room, size, limit int) [][]string {
	slices.SortFunc(rooms, func(a, b room) int {
		return cmp.Or(cmp.Compare(b.holds, a.holds), cmp.Compare(a.fragments, b.fragments),
			cmp.Compare(a.leftMiB, b.leftMiB), cmp.Compare(a.name, b.name))
	})
	fewest, held := 0, 0
	for fewest < len(rooms) && held < size {
		held += rooms[fewest].holds
		fewest++
	}
	if held < size || limit <= 0 {
		return nil
	}
	if fewest == 1 {
		var sets [][]string
		for _, r := range rooms {
			if r.holds < size || len(sets) == limit {
				break
			}
			sets = append(sets, []string{r.name})
		}
		return sets
	}
	most := names(rooms[:fewest])
	sets := [][]string{most}
	if tight, ok := tightest(rooms[fewest-1:], size-(held-rooms[fewest-1].holds)); ok && tight != most[fewest-1] && limit > 1 {
		sets = append(sets, append(slices.Clone(most[:fewest-1]), tight))
	}
	return sets
}

// tightest returns the room that holds rest pods and leaves the fewest new
// fragments and the least memory free.
func tightest(rooms []room, rest int) (string, bool) {
	best := -1
	for i, r := range rooms {
		if r.holds < rest {
			continue
		}
		if best < 0 || r.holds < rooms[best].holds ||
			r.holds == rooms[best].holds && cmp.Or(cmp.Compare(r.fragments, rooms[best].fragments), cmp.Compare(r.leftMiB, rooms[best].leftMiB)) < 0 {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	return rooms[best].name, true
}

// names returns the rooms' node names.
func names(rooms []room) []string {
	out := make([]string, len(rooms))
	for i, r := range rooms {
		out[i] = r.name
	}
	return out
}
