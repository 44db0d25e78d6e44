package backlog

import (
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// freeBindMatcher pairs the slices freed on a node with the binds that
// took them, to time freed → bound. A bind on a node is matched to the
// earliest free on that node, made at or before the bind, whose room
// not yet taken holds the whole pod: every GPU the pod holds is one the
// free gave back, with at least the pod's memory and cores left on it.
// The bind takes that much of the free's room, so a free of four whole
// GPUs can serve four one-GPU pods, each timed from the free. A bind that
// no free holds used room that was free before, or room that several
// frees made together; it is counted, not timed. It is not safe for
// concurrent use.
type freeBindMatcher struct {
	// frees are each node's frees, oldest first, until their room is gone.
	frees map[string][]*freeEvent
	// latencies are the times from a free to each bind matched to it.
	latencies []time.Duration
	// taken counts the frees matched to at least one bind.
	taken int
	// unmatched counts binds that no free held.
	unmatched int
}

// freeEvent is one pod's slice freed on a node.
type freeEvent struct {
	at time.Time
	// gpus is the room given back and not taken yet, by GPU UUID.
	gpus map[string]room
	// taken is set once a bind was matched to the free.
	taken bool
}

func newFreeBindMatcher() *freeBindMatcher {
	return &freeBindMatcher{frees: map[string][]*freeEvent{}}
}

// freed records room given back on the node at a time.
func (m *freeBindMatcher) freed(node string, at time.Time, gpus map[string]room) {
	m.frees[node] = append(m.frees[node], &freeEvent{at: at, gpus: gpus})
}

// bound matches a pod bound on the node at a time, holding holds, to a
// free, and returns the time from that free to the bind.
func (m *freeBindMatcher) bound(node string, at time.Time, holds []placement.Hold) (time.Duration, bool) {
	frees := m.frees[node]
	for i, f := range frees {
		if f.at.After(at) {
			break
		}
		if !f.holds(holds) {
			continue
		}
		if !f.taken {
			f.taken = true
			m.taken++
		}
		if f.take(holds) {
			m.frees[node] = append(frees[:i:i], frees[i+1:]...)
		}
		d := at.Sub(f.at)
		m.latencies = append(m.latencies, d)
		return d, true
	}
	m.unmatched++
	return 0, false
}

// holds reports whether the free's room holds every one of a pod's holds.
func (f *freeEvent) holds(holds []placement.Hold) bool {
	for _, h := range holds {
		r, ok := f.gpus[h.UUID]
		if !ok || h.MemoryMiB > r.memoryMiB || h.Cores > r.cores {
			return false
		}
	}
	return len(holds) > 0
}

// take removes the holds from the free's room and reports whether no
// memory is left in it.
func (f *freeEvent) take(holds []placement.Hold) bool {
	for _, h := range holds {
		r := f.gpus[h.UUID]
		r.memoryMiB -= h.MemoryMiB
		r.cores -= h.Cores
		f.gpus[h.UUID] = r
	}
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
