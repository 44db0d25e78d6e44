package backlog

import (
	"math/rand/v2"
	"sync"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// backlogTracker follows a backlog row as the bench sees it: which pods
// wait and which run where, every free the bench makes and every bind the
// scheduler makes. It feeds the view, the freed → bound matcher and the
// fits-while-waiting monitor, counting only what happens in the measured
// window. It is safe for concurrent use.
type backlogTracker struct {
	mu      sync.Mutex
	view    *backlogView
	matcher *freeBindMatcher
	monitor *fitWaitMonitor
	// waiting is the shape index of each pod not yet bound, by name.
	waiting map[string]int
	// running is what each running pod holds, by name; names lists them
	// for picking one at random.
	running map[string]runningPod
	names   []string
	// measuring is set while the window lasts; frees and placed count
	// what happened in it, and answers are how long each request that
	// freed GPUs in it took to answer.
	measuring     bool
	frees, placed int
	answers       []time.Duration
}

// runningPod is where a running pod is and what it holds there.
type runningPod struct {
	node  string
	holds []placement.Hold
	// index is the pod's place in the tracker's names.
	index int
}

func newBacklogTracker(view *backlogView) *backlogTracker {
	return &backlogTracker{
		view: view, matcher: newFreeBindMatcher(), monitor: newFitWaitMonitor(),
		waiting: map[string]int{}, running: map[string]runningPod{},
	}
}

// wait records a pod of the shape that waits to be scheduled.
func (t *backlogTracker) wait(name string, shape int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.waiting[name] = shape
	t.view.waiting[shape]++
}

// waitingCount is how many pods wait.
func (t *backlogTracker) waitingCount() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.waiting)
}

// run records a pod that runs on the node, holding holds, before the
// scheduler starts; its holds are already in the view.
func (t *backlogTracker) run(name, node string, holds []placement.Hold) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.addRunning(name, node, holds)
}

func (t *backlogTracker) addRunning(name, node string, holds []placement.Hold) {
	t.running[name] = runningPod{node: node, holds: holds, index: len(t.names)}
	t.names = append(t.names, name)
}

// scan opens a wait on every node where some waiting pod fits now.
func (t *backlogTracker) scan(at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, node := range t.view.names {
		t.monitor.changed(node, at, t.view.fitsWaiting(node), false)
	}
}

// start begins the measured window.
func (t *backlogTracker) start(at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.measuring = true
	t.monitor.restart(at)
}

// bound records a waiting pod bound on the node at a time, holding holds.
// Pods that were not waiting, and binds seen twice, are ignored.
func (t *backlogTracker) bound(name, node string, holds []placement.Hold, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	shape, ok := t.waiting[name]
	if !ok {
		return
	}
	delete(t.waiting, name)
	t.view.hold(node, holds)
	t.addRunning(name, node, holds)
	last := t.view.bound(shape)
	if !t.measuring {
		t.monitor.changed(node, at, t.view.fitsWaiting(node), true)
		return
	}
	t.placed++
	t.matcher.bound(node, at, holds)
	t.monitor.changed(node, at, t.view.fitsWaiting(node), true)
	if last {
		// The shape's last waiting pod may have been all that fitted elsewhere.
		for _, n := range t.monitor.open() {
			t.monitor.changed(n, at, t.view.fitsWaiting(n), false)
		}
	}
}

// pick takes a running pod at random for the bench to end, and returns
// its name and where it runs; false when none runs. The pod's GPUs stay
// held until freed says it is gone.
func (t *backlogTracker) pick(rng *rand.Rand) (string, runningPod, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.names) == 0 {
		return "", runningPod{}, false
	}
	i := rng.IntN(len(t.names))
	name := t.names[i]
	p := t.running[name]
	last := t.names[len(t.names)-1]
	t.names[i] = last
	moved := t.running[last]
	moved.index = i
	t.running[last] = moved
	t.names = t.names[:len(t.names)-1]
	delete(t.running, name)
	return name, p, true
}

// freed records that a pod the bench picked is gone, at a time: its GPUs
// are free.
func (t *backlogTracker) freed(p runningPod, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	room := t.view.freedRoom(p.node, p.holds)
	t.view.release(p.node, p.holds)
	if t.measuring {
		t.frees++
		t.matcher.freed(p.node, at, room)
	}
	t.monitor.changed(p.node, at, t.view.fitsWaiting(p.node), false)
}

// answered records how long a request that freed GPUs took to answer.
func (t *backlogTracker) answered(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.measuring {
		t.answers = append(t.answers, d)
	}
}

// backlogMeasures are what the tracker measured in the window.
type backlogMeasures struct {
	// Frees are the pods the bench ended; Placed the waiting pods bound.
	Frees, Placed int
	// FreedToBound is from a free to each bind that drew on its room,
	// counting frees not taken as their age at the end; Taken frees were
	// drawn on by a bind at least, Unmatched binds drew on no free.
	FreedToBound censored
	Taken        int
	Unmatched    int
	// FreeAnswer is how long the requests that freed GPUs took to
	// answer: part of freed → bound is the API server carrying them out.
	FreeAnswer meter.Quantiles
	// FitWait is the fits-while-waiting monitor at the end.
	FitWait fitWaits
	// Waiting is how many pods still waited at the end.
	Waiting int
}

// finish ends the window at a time and returns what it measured.
func (t *backlogTracker) finish(end time.Time) backlogMeasures {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.measuring = false
	t.monitor.end(end)
	return backlogMeasures{
		Frees: t.frees, Placed: t.placed,
		FreedToBound: censoredQuantiles(t.matcher.latencies, t.matcher.untaken(end)),
		Taken:        t.matcher.taken, Unmatched: t.matcher.unmatched,
		FreeAnswer: meter.SampleQuantiles(t.answers),
		FitWait:    t.monitor.fitWaits, Waiting: len(t.waiting),
	}
}
