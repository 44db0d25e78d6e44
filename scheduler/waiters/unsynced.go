package waiters

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// Unsynced holds the GPU pods the fit gate meets before the view has
// synced, and has them judged together once it has: tried now, each would
// fail on a view not yet synced and wait out its back-off.
type Unsynced struct {
	ready func() bool

	mu   sync.Mutex
	done bool
	pods []*v1.Pod
}

// NewUnsynced holds pods until ready reports that the view has synced.
func NewUnsynced(ready func() bool) *Unsynced {
	return &Unsynced{ready: ready}
}

// Wait reports whether the pod must wait for the view to sync, and
// remembers it if so.
func (u *Unsynced) Wait(pod *v1.Pod) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.done {
		return false
	}
	if u.ready() {
		u.done = true
		return false
	}
	u.pods = append(u.pods, pod)
	return true
}

// Run waits for the view to sync, and then returns the pods that waited
// for it, for the Queue to activate; nil when ctx ends first.
func (u *Unsynced) Run(ctx context.Context) []*v1.Pod {
	if err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(context.Context) (bool, error) { return u.ready(), nil }); err != nil {
		return nil
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.done = true
	pods := u.pods
	u.pods = nil
	return pods
}
