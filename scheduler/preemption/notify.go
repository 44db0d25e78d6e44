package preemption

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
)

// DefaultRepeat is how long a Notifier keeps from saying the same thing
// about the same pod twice.
const DefaultRepeat = 10 * time.Minute

// Notifier records one event per preemption decision on a pod:
// kube-scheduler asks again at every scheduling attempt of a pod that does
// not fit, and the answer is mostly the same, so the same words for the
// same pod are recorded again only after Repeat. A different decision is
// recorded at once. It is safe for concurrent use.
type Notifier struct {
	recorder events.EventRecorder
	clock    clock.PassiveClock
	repeat   time.Duration

	mu sync.Mutex
	// last is what was last said about each pod, and when; entries older
	// than repeat are dropped as others are recorded.
	last map[types.UID]said
}

type said struct {
	note string
	at   time.Time
}

// NewNotifier returns a Notifier recording with recorder, which may be nil
// to record nothing.
func NewNotifier(recorder events.EventRecorder, clk clock.PassiveClock, repeat time.Duration) *Notifier {
	return &Notifier{recorder: recorder, clock: clk, repeat: repeat, last: map[types.UID]said{}}
}

// Said reports whether the Notifier recorded anything about the pod
// within the last repeat: work that only finds something to say can be
// spared then.
func (n *Notifier) Said(uid types.UID) bool {
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	l, ok := n.last[uid]
	return ok && now.Sub(l.at) < n.repeat
}

// Notify records note on the pod, unless it said the same about the pod
// within the last repeat. It reports whether it recorded.
func (n *Notifier) Notify(pod *corev1.Pod, eventType, reason, note string) bool {
	if n.recorder == nil {
		return false
	}
	now := n.clock.Now()
	n.mu.Lock()
	if l, ok := n.last[pod.UID]; ok && l.note == note && now.Sub(l.at) < n.repeat {
		n.mu.Unlock()
		return false
	}
	for uid, l := range n.last {
		if now.Sub(l.at) >= n.repeat {
			delete(n.last, uid)
		}
	}
	n.last[pod.UID] = said{note: note, at: now}
	n.mu.Unlock()
	n.recorder.Eventf(pod, nil, eventType, reason, "Preempting", "%s", note)
	return true
}
