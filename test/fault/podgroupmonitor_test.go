package fault

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/tessera-gpu/tessera/test/framework"
)

// podGroupMonitor follows, from API state alone, the stream's PodGroups
// and every GPU: each gang found half placed (some live members bound,
// others not) and for how long, and any GPU that the allocations of live
// pods, in every namespace, over-commit.
type podGroupMonitor struct {
	cp *framework.ControlPlane

	mu sync.Mutex
	// half: gang → when a reading first found it half placed.
	half        map[types.UID]time.Time
	halfNames   map[types.UID]string
	everHalf    map[types.UID]bool
	longest     time.Duration
	longestGang string
	overCommits []string
}

func newPodGroupMonitor(cp *framework.ControlPlane) *podGroupMonitor {
	return &podGroupMonitor{cp: cp, half: map[types.UID]time.Time{}, halfNames: map[types.UID]string{}, everHalf: map[types.UID]bool{}}
}

// run samples until ctx ends.
func (m *podGroupMonitor) run(ctx context.Context) {
	for ctx.Err() == nil {
		m.sample(ctx)
		sleep(ctx, samplePeriod)
	}
}

func (m *podGroupMonitor) sample(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	s, err := readStateIn(ctx, m.cp, "")
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		// While the API does not answer nothing is known; half
		// placements count again from its first answer.
		clear(m.half)
		return
	}
	for _, v := range overCommittedOnNodes(s) {
		if !slices.Contains(m.overCommits, v) {
			m.overCommits = append(m.overCommits, v)
		}
	}
	half := halfPlaced(s)
	for g, since := range m.half {
		if _, ok := half[g]; !ok {
			m.record(g, now.Sub(since))
			delete(m.half, g)
		}
	}
	for g, what := range half {
		if _, ok := m.half[g]; !ok {
			m.half[g] = now
		}
		m.halfNames[g], m.everHalf[g] = what, true
	}
}

func (m *podGroupMonitor) record(g types.UID, d time.Duration) {
	if d > m.longest {
		m.longest, m.longestGang = d, m.halfNames[g]
	}
}

// halfPlaced returns the stream's gangs of which some live members are
// bound and others are not, each with which are bound.
func halfPlaced(s *state) map[types.UID]string {
	bound, unbound := map[types.UID][]string{}, map[types.UID]int{}
	for _, p := range s.live() {
		g := types.UID(p.Labels[gangLabel])
		if p.Namespace != podGroupNamespace || g == "" {
			continue
		}
		if p.Spec.NodeName != "" {
			bound[g] = append(bound[g], p.Name)
		} else {
			unbound[g]++
		}
	}
	out := map[types.UID]string{}
	for g, b := range bound {
		if unbound[g] > 0 {
			slices.Sort(b)
			out[g] = string(g) + " (bound: " + strings.Join(b, ", ") + ")"
		}
	}
	return out
}

// findings returns the longest a gang stayed half placed, half placements
// still going on included, which gang it was, how many gangs were ever
// seen half placed, and the over-commits any reading saw.
func (m *podGroupMonitor) findings() (longest time.Duration, gang string, everHalf int, overCommits []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	longest, gang = longestOf(m.longest, m.longestGang, m.half, m.halfNames)
	return longest, gang, len(m.everHalf), slices.Clone(m.overCommits)
}
