package harness

import (
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// BindRecorder records when each pod was first seen bound, from a pod
// informer's events, and says when all expected pods are.
type BindRecorder struct {
	expected int
	mu       sync.Mutex
	at       map[string]time.Time
	last     time.Time
	all      chan struct{}
}

// NewBindRecorder records the binds of expected pods.
func NewBindRecorder(expected int) *BindRecorder {
	return &BindRecorder{expected: expected, at: make(map[string]time.Time, expected), all: make(chan struct{})}
}

// Handler is the informer event handler that records binds.
func (b *BindRecorder) Handler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { b.observe(obj) },
		UpdateFunc: func(_, obj any) { b.observe(obj) },
	}
}

func (b *BindRecorder) observe(obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, seen := b.at[pod.Name]; seen {
		return
	}
	b.at[pod.Name] = now
	b.last = now
	if len(b.at) == b.expected {
		close(b.all)
	}
}

// allBound is closed once every expected pod is bound.
func (b *BindRecorder) allBound() <-chan struct{} { return b.all }

// Snapshot returns how many pods are bound, when the last was, and the
// latency of each from its creation, or from start if it was created before.
func (b *BindRecorder) Snapshot(created *CreateTimes, start time.Time) (bound int, last time.Time, latencies []time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	latencies = make([]time.Duration, 0, len(b.at))
	for name, at := range b.at {
		from := start
		if c, ok := created.get(name); ok && c.After(start) {
			from = c
		}
		latencies = append(latencies, at.Sub(from))
	}
	return len(b.at), b.last, latencies
}

// Times returns when each pod bound so far was first seen bound, by name.
func (b *BindRecorder) Times() map[string]time.Time {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.at)
}
