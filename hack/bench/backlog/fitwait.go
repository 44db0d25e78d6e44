package backlog

import "time"

// fitWaitMonitor watches the invariant that no pod waits while a GPU
// could hold it. Per node, a wait begins at a change on the node (a free
// or a bind) after which some waiting pod fits it, by the bench's view,
// and ends at the next bind on the node, or when no waiting pod fits it
// any more because the last pods of the shapes that fitted were bound
// elsewhere. After a bind on the node, if some waiting pod still fits, a
// new wait begins then. The monitor keeps the longest wait. It is not
// safe for concurrent use.
type fitWaitMonitor struct {
	// since is when the wait open on each node began.
	since map[string]time.Time
	fitWaits
}

// fitWaits are the waits the monitor saw.
type fitWaits struct {
	// Longest is the longest wait that ended, or that was open at the end
	// (then counted to the end, a lower bound: OpenAtEnd), on LongestNode.
	Longest     time.Duration
	LongestNode string
	OpenAtEnd   bool
	// Waits counts the waits that ended or were open at the end, Over
	// those longer than targetFitWait, the first maxLongWaits of which
	// are in Long.
	Waits, Over int
	Long        []longWait
}

// maxLongWaits is how many waits over targetFitWait the monitor lists.
const maxLongWaits = 10

// longWait is one wait longer than targetFitWait: on Node, from Since,
// for Length, open at the end when OpenAtEnd.
type longWait struct {
	Node      string
	Since     time.Time
	Length    time.Duration
	OpenAtEnd bool
}

func newFitWaitMonitor() *fitWaitMonitor {
	return &fitWaitMonitor{since: map[string]time.Time{}}
}

// changed records what the node's change at a time left: whether some
// waiting pod fits the node, and whether the change was a bind on it.
func (m *fitWaitMonitor) changed(node string, at time.Time, fits, bind bool) {
	since, open := m.since[node]
	if open && (bind || !fits) {
		m.closeWait(node, since, at, false)
		open = false
	}
	if fits && !open {
		m.since[node] = at
	}
}

// restart forgets the waits that ended and counts the open ones from at,
// where the measured window begins.
func (m *fitWaitMonitor) restart(at time.Time) {
	for node := range m.since {
		m.since[node] = at
	}
	m.fitWaits = fitWaits{}
}

// end counts every wait still open as lasting until at.
func (m *fitWaitMonitor) end(at time.Time) {
	for node, since := range m.since {
		m.closeWait(node, since, at, true)
	}
}

// open lists the nodes with a wait open.
func (m *fitWaitMonitor) open() []string {
	out := make([]string, 0, len(m.since))
	for node := range m.since {
		out = append(out, node)
	}
	return out
}

func (m *fitWaitMonitor) closeWait(node string, since, at time.Time, atEnd bool) {
	delete(m.since, node)
	m.Waits++
	d := at.Sub(since)
	if d > targetFitWait {
		m.Over++
		if len(m.Long) < maxLongWaits {
			m.Long = append(m.Long, longWait{Node: node, Since: since, Length: d, OpenAtEnd: atEnd})
		}
	}
	if d > m.Longest || m.LongestNode == "" {
		m.Longest, m.LongestNode, m.OpenAtEnd = d, node, atEnd
	}
}
