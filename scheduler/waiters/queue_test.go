package waiters

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/scheduler/view"
)

// chunkedActivations records the size of each activation.
type chunkedActivations struct{ sizes []int }

func (a *chunkedActivations) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	a.sizes = append(a.sizes, len(pods))
}

// TestActivateInChunks checks that a large activation, such as a
// scheduler's first judgement of a backlog, takes kube-scheduler's queue
// lock for at most activateChunk pods at a time, and activates them all.
func TestActivateInChunks(t *testing.T) {
	act := &chunkedActivations{}
	r := NewQueue(act, klog.Background(), view.New(), nil, view.Rules{})
	pods := make([]*v1.Pod, 2*activateChunk+1)
	for i := range pods {
		pods[i] = gpuPod(fmt.Sprintf("p-%04d", i), 1024)
	}
	r.activate("test", pods)
	if want := []int{activateChunk, activateChunk, 1}; !slices.Equal(act.sizes, want) {
		t.Errorf("activated %v pods at a time, want %v", act.sizes, want)
	}
}
