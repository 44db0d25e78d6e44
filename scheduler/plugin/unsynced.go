package plugin

import (
	"context"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// unsynced holds the GPU pods the fit gate meets before the view has
// synced, and has them judged together once it has: tried now, each would
// fail on a view not yet synced and wait out its back-off.
type unsynced struct {
	ready func() bool

	mu   sync.Mutex
	done bool
	pods []*v1.Pod
}

// wait reports whether the pod must wait for the view to sync, and
// remembers it if so.
func (u *unsynced) wait(pod *v1.Pod) bool {
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

// run waits for the view to sync, and then returns the pods that waited
// for it, for the requeuer to activate; nil when ctx ends first.
func (u *unsynced) run(ctx context.Context) []*v1.Pod {
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
