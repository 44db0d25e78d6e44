package plugin

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// gangHarness is a barrier of three members, each of whose Bind waits in
// a goroutine of its own once started.
type gangHarness struct {
	clock   *testingclock.FakeClock
	gangs   *gangBarriers
	barrier *gangBarrier
	pods    []*v1.Pod
	cancels []context.CancelFunc
	results []chan error

	mu     sync.Mutex
	failed [][]*v1.Pod
}

func newGangHarness(t *testing.T) *gangHarness {
	h := &gangHarness{clock: testingclock.NewFakeClock(time.Now())}
	h.gangs = newGangBarriers(klog.Background(), h.clock, gangBindTimeout, func(members []*v1.Pod, _ string) {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.failed = append(h.failed, members)
	})
	placement := framework.NewCycleState()
	for _, name := range []string{"m-0", "m-1", "m-2"} {
		pod := gpuPod(name, 4000)
		pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("trainer")}
		h.barrier = h.gangs.join(placement, pod)
		if err := h.gangs.admit(h.barrier, pod.UID); err != nil {
			t.Fatalf("admitting %s: %v", name, err)
		}
		h.pods, h.cancels, h.results = append(h.pods, pod), append(h.cancels, nil), append(h.results, nil)
	}
	return h
}

// bind starts member i's wait at the barrier, with ctx.
func (h *gangHarness) bind(t *testing.T, i int) {
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	h.cancels[i] = cancel
	result := make(chan error, 1)
	h.results[i] = result
	go func() { result <- h.gangs.wait(ctx, h.barrier, h.pods[i].UID) }()
}

// TestGangBarrier pins that the members of a gang placed together are
// bound only once every one has passed what can fail before binding, and
// that when one fails, is deleted, is given back, is not there in time,
// or its binding ends, every member waiting fails, with why, the gang is
// backed off once, whole, and the barrier keeps no member.
func TestGangBarrier(t *testing.T) {
	tests := []struct {
		name string
		// started are the members waiting before run drives the rest.
		started []int
		run     func(t *testing.T, h *gangHarness)
		// wantErr is in every started member's error; empty: none fails.
		wantErr string
	}{
		{name: "every member passes: all bind", started: []int{0, 1, 2}},
		{name: "one member fails: all roll back", started: []int{0, 1}, wantErr: "refused",
			run: func(t *testing.T, h *gangHarness) {
				h.gangs.fail(h.barrier, errors.New("binding of m-2 refused"))
				h.bind(t, 2)
			}},
		{name: "a member deleted while the others wait", started: []int{0, 1}, wantErr: "pod default/m-2 of PodGroup default/trainer was deleted",
			run: func(t *testing.T, h *gangHarness) { h.gangs.podDeleted(h.pods[2]) }},
		{name: "a member waiting deleted", started: []int{0, 1}, wantErr: "pod default/m-0 of PodGroup default/trainer was deleted",
			run: func(t *testing.T, h *gangHarness) { h.gangs.podDeleted(h.pods[0]) }},
		{name: "a member that never comes: timeout", started: []int{0, 1}, wantErr: "within 30s",
			run: func(t *testing.T, h *gangHarness) {
				for !isClosed(h.barrier.done) {
					h.clock.Step(gangBindTimeout)
					time.Sleep(time.Millisecond)
				}
			}},
		{name: "a waiting member's binding cancelled", started: []int{0, 1}, wantErr: "context canceled",
			run: func(t *testing.T, h *gangHarness) { h.cancels[0]() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newGangHarness(t)
			for _, i := range tt.started {
				h.bind(t, i)
			}
			if tt.run != nil {
				tt.run(t, h)
			}
			for i, result := range h.results {
				if result == nil {
					continue
				}
				err := <-result
				switch {
				case tt.wantErr == "" && err != nil:
					t.Errorf("member %d: %v, want it bound", i, err)
				case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
					t.Errorf("member %d: %v, want an error that says %q", i, err, tt.wantErr)
				}
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			switch {
			case tt.wantErr == "" && len(h.failed) > 0:
				t.Errorf("the gang was backed off %d times, want none", len(h.failed))
			case tt.wantErr != "" && (len(h.failed) != 1 || len(h.failed[0]) != 3):
				t.Errorf("the gang was backed off as %v, want once with its 3 members", h.failed)
			}
			if n := len(h.gangs.byPod); n > 0 {
				t.Errorf("%d members kept after the barrier ended", n)
			}
			if err := h.gangs.admit(h.barrier, h.pods[2].UID); tt.wantErr != "" && err == nil {
				t.Error("a member reserved again after its gang was rolled back was admitted")
			}
		})
	}
}
