package backlog

import (
	"slices"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// freeBindMatcher pairs the slices freed on a node with the binds that
// took them, to time freed → bound. Freed room is taken oldest first: a
// bind on a node draws, on each GPU it holds, the memory and cores it
// needs from the frees on that node, made at or before the bind, that gave
// that GPU room not taken yet, the earliest free first; what they lack
// came from room that was free before the window. Every free a bind draws
// on is taken, and the bind is timed from the latest of them, when the
// last of the room it needed came free. So a free of four whole GPUs can
// serve four one-GPU pods, each timed from the free, and a two-GPU pod
// placed on the GPUs of two frees takes both. A bind that draws on no
// free is counted, not timed. It is not safe for concurrent use.
type freeBindMatcher struct {
	// frees are each node's frees, oldest first, until their room is gone.
	frees map[string][]*freeEvent
	// latencies are the times from the latest free each bind drew on.
	latencies []time.Duration
	// taken counts the frees at least one bind drew on.
	taken int
	// unmatched counts binds that drew on no free.
	unmatched int
}

// freeEvent is one pod's slice freed on a node.
type freeEvent struct {
	at time.Time
	// gpus is the room given back and not taken yet, by GPU UUID.
	gpus map[string]room
	// taken is set once a bind drew on the free.
	taken bool
}

func newFreeBindMatcher() *freeBindMatcher {
	return &freeBindMatcher{frees: map[string][]*freeEvent{}}
}

// freed records room given back on the node at a time.
func (m *freeBindMatcher) freed(node string, at time.Time, gpus map[string]room) {
	m.frees[node] = append(m.frees[node], &freeEvent{at: at, gpus: gpus})
}

// bound draws a pod bound on the node at a time, holding holds, on the
// node's frees, and returns the time from the latest free it drew on to
// the bind; false when it drew on none.
func (m *freeBindMatcher) bound(node string, at time.Time, holds []placement.Hold) (time.Duration, bool) {
	var latest time.Time
	drew := false
	for _, h := range holds {
		need := room{memoryMiB: h.MemoryMiB, cores: h.Cores}
		for _, f := range m.frees[node] {
			if f.at.After(at) || need.memoryMiB <= 0 && need.cores <= 0 {
				break
			}
			if !f.draw(h.UUID, &need) {
				continue
			}
			drew = true
			if f.at.After(latest) {
				latest = f.at
			}
			if !f.taken {
				f.taken = true
				m.taken++
			}
		}
	}
	m.frees[node] = slices.DeleteFunc(m.frees[node], (*freeEvent).empty)
	if !drew {
		m.unmatched++
		return 0, false
	}
	d := at.Sub(latest)
	m.latencies = append(m.latencies, d)
	return d, true
}

// draw takes as much of need as the free's room on the GPU gives, and
// reports whether it gave any.
func (f *freeEvent) draw(uuid string, need *room) bool {
	r, ok := f.gpus[uuid]
	if !ok {
		return false
	}
	memory := min(need.memoryMiB, r.memoryMiB)
	cores := min(need.cores, r.cores)
	if memory <= 0 && cores <= 0 {
		return false
	}
	r.memoryMiB -= memory
	r.cores -= cores
	need.memoryMiB -= memory
	need.cores -= cores
	f.gpus[uuid] = r
	return true
}

// empty reports whether no memory is left in the free's room: a slice
// needs memory, so cores alone serve no pod.
func (f *freeEvent) empty() bool {
	for _, r := range f.gpus {
		if r.memoryMiB > 0 {
			return false
		}
	}
	return true
}

// untaken returns how long each free not matched by end had waited then.
func (m *freeBindMatcher) untaken(end time.Time) []time.Duration {
	var out []time.Duration
	for _, frees := range m.frees {
		for _, f := range frees {
			if !f.taken {
				out = append(out, end.Sub(f.at))
			}
		}
	}
	return out
}

// censoredQuantiles are the nearest-rank median and 99th percentile of
// the times from frees to the binds that took them, counting each free
// not taken as its age at the end. Such an age is a lower bound of its time, so a quantile
// is exact only when every untaken free's age lies above it; otherwise it
// is a lower bound, and says so.
func censoredQuantiles(taken, untaken []time.Duration) censored {
	all := make([]time.Duration, 0, len(taken)+len(untaken))
	all = append(all, taken...)
	all = append(all, untaken...)
	c := censored{Quantiles: meter.SampleQuantiles(all)}
	for _, u := range untaken {
		c.P50AtLeast = c.P50AtLeast || u <= c.P50
		c.P99AtLeast = c.P99AtLeast || u <= c.P99
	}
	return c
}

// censored are quantiles of which some samples were cut short.
type censored struct {
	meter.Quantiles
	// P50AtLeast and P99AtLeast say that the quantile is a lower bound.
	P50AtLeast, P99AtLeast bool
}
