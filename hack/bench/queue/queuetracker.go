package queue

import (
	"slices"
	"sync"
	"time"
)

// queueTracker follows every Job of a queue run from its creation to its
// end, the GPU memory its pods hold, and whether the queue has stalled.
// Times come from the caller, as the bench's watches see the events.
type queueTracker struct {
	mu         sync.Mutex
	podsPerJob int
	stall      time.Duration
	jobs       map[string]*jobRecord
	// pods are the Jobs' pods placed so far, by name.
	pods map[string]*podRecord
	// progress is when something last moved: a Job admitted, a pod placed
	// or a Job done.
	progress time.Time
	// frees are when Jobs' work was done and their GPUs freed, in order.
	frees   []time.Time
	samples []memorySample
	stalled *queueStall
}

// jobRecord is what happened to one Job.
type jobRecord struct {
	created, admitted, running, done time.Time
	// unschedulable is when the scheduler first found a pod of the
	// admitted Job no room.
	unschedulable     time.Time
	placed, allocated int
	// gates are when the Job's Workload last got its quota and its
	// admission checks Ready, on its way to admission.
	gates workloadGates
}

// podRecord is one placed pod of a Job.
type podRecord struct {
	job       string
	memoryMiB int64
	allocated bool
}

// memorySample is the GPU memory the Jobs' pods held at one time: in
// Jobs whose pods all run (at work) and in Jobs still waiting for some
// (held idle).
type memorySample struct {
	at            time.Time
	workMiB, idle int64
}

// queueStall is a run in which nothing progressed for the tracker's
// stall while Jobs were not done. It is a deadlock when admitted Jobs
// held quota and GPUs with pods Pending meanwhile.
type queueStall struct {
	// at is when it was declared; since is the last progress before it.
	at, since time.Time
	// jobs are the admitted Jobs with pods Pending, pending their pods,
	// heldMiB the memory their placed pods hold; unadmitted the Jobs
	// Kueue had not admitted.
	jobs, pending, unadmitted int
	heldMiB                   int64
}

// deadlock reports whether admitted Jobs held pods Pending in the stall.
func (s *queueStall) deadlock() bool { return s != nil && s.jobs > 0 }

func newQueueTracker(podsPerJob int, stall time.Duration, start time.Time) *queueTracker {
	return &queueTracker{podsPerJob: podsPerJob, stall: stall, jobs: map[string]*jobRecord{}, pods: map[string]*podRecord{}, progress: start}
}

// job returns the record of the Job, made on first use.
func (t *queueTracker) job(name string) *jobRecord {
	j, ok := t.jobs[name]
	if !ok {
		j = &jobRecord{}
		t.jobs[name] = j
	}
	return j
}

// created records a Job's creation.
func (t *queueTracker) created(job string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.job(job).created = at
}

// admitted records a Job's admission by Kueue, the first time it is seen.
func (t *queueTracker) admitted(job string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if j := t.job(job); j.admitted.IsZero() {
		j.admitted, t.progress = at, at
	}
}

// placed records a pod of a Job bound with GPUs taken, the first time.
func (t *queueTracker) placed(pod, job string, memoryMiB int64, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.pods[pod]; ok {
		return
	}
	t.pods[pod] = &podRecord{job: job, memoryMiB: memoryMiB}
	t.job(job).placed++
	t.progress = at
}

// allocated records a placed pod started by its kubelet, and reports
// whether its Job's pods now all run, the first time they do.
func (t *queueTracker) allocated(pod string, at time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.pods[pod]
	if !ok || p.allocated {
		return false
	}
	p.allocated = true
	j := t.job(p.job)
	j.allocated++
	if j.allocated < t.podsPerJob || !j.running.IsZero() {
		return false
	}
	j.running = at
	return true
}

// unschedulable records that the scheduler found a pod of the Job no room.
func (t *queueTracker) unschedulable(job string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if j := t.job(job); j.unschedulable.IsZero() && !j.admitted.IsZero() {
		j.unschedulable = at
	}
}

// finished records a Job's work done: its pods succeeded, their GPUs free.
func (t *queueTracker) finished(job string, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.job(job).done, t.progress = at, at
	t.frees = append(t.frees, at)
}

// workload records the gates of a Job's Workload at one sight of it,
// until the Job is admitted: whether its quota is reserved and whether
// its admission checks are all Ready.
func (t *queueTracker) workload(job string, quota, checks bool, at time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if j := t.job(job); j.admitted.IsZero() {
		j.gates.see(quota, checks, at)
	}
}

// lastFree is, for a Job admitted after room freed while it waited, the
// last free before its admission.
func (t *queueTracker) lastFree(j *jobRecord) (time.Time, bool) {
	i, _ := slices.BinarySearchFunc(t.frees, j.admitted, func(f, at time.Time) int { return f.Compare(at) })
	if i == 0 || t.frees[i-1].Before(j.created) {
		return time.Time{}, false
	}
	return t.frees[i-1], true
}

// sample records the memory held now and declares a stall if Jobs are
// not done and nothing has progressed for the stall. It reports whether
// every Job is done, or the stall, once declared.
func (t *queueTracker) sample(at time.Time) (bool, *queueStall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := memorySample{at: at}
	for _, p := range t.pods {
		j := t.jobs[p.job]
		switch {
		case !j.done.IsZero():
		case !j.running.IsZero():
			s.workMiB += p.memoryMiB
		default:
			s.idle += p.memoryMiB
		}
	}
	t.samples = append(t.samples, s)
	done, waiting := 0, queueStall{}
	for _, j := range t.jobs {
		switch {
		case !j.done.IsZero():
			done++
		case j.admitted.IsZero():
			waiting.unadmitted++
		case j.placed < t.podsPerJob:
			waiting.jobs++
			waiting.pending += t.podsPerJob - j.placed
		}
	}
	if t.stalled == nil && done < len(t.jobs) && at.Sub(t.progress) >= t.stall {
		waiting.at, waiting.since, waiting.heldMiB = at, t.progress, s.idle
		t.stalled = &waiting
	}
	return done == len(t.jobs), t.stalled
}
