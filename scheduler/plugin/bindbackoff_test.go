package plugin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// TestBindBackoff pins that a PodGroup's pod whose binding failed is held
// back 1 s, doubling with each failure up to 10 s, with a reason that
// names the node and the group, is activated when its back-off ends, and
// is held back no more once bound; a pod of no PodGroup is left to
// kube-scheduler's own back-off.
func TestBindBackoff(t *testing.T) {
	tests := []struct {
		name      string
		podGroup  string
		failures  int
		bound     bool
		wantDelay time.Duration
	}{
		{name: "a pod of no PodGroup is not held back", failures: 1},
		{name: "first failure", podGroup: "trainer", failures: 1, wantDelay: time.Second},
		{name: "third failure", podGroup: "trainer", failures: 3, wantDelay: 4 * time.Second},
		{name: "at most 10 s", podGroup: "trainer", failures: 6, wantDelay: 10 * time.Second},
		{name: "bound after failing", podGroup: "trainer", failures: 2, bound: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Now())
			act := &activations{}
			b := newBindBackoff(t.Context(), clk, act)
			pod := gpuPod("member", 15360)
			if tt.podGroup != "" {
				pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(tt.podGroup)}
			}
			for range tt.failures {
				b.failed([]*v1.Pod{pod}, fmt.Sprintf("binding to node %s failed (%v)", node, errors.New("refused")))
			}
			if tt.bound {
				b.bound(pod.UID)
			}
			reason, waiting := b.waiting(pod.UID)
			if waiting != (tt.wantDelay > 0) {
				t.Fatalf("waiting %t, want %t", waiting, tt.wantDelay > 0)
			}
			if !waiting {
				return
			}
			for _, want := range []string{node, "refused", tt.podGroup, tt.wantDelay.String()} {
				if !strings.Contains(reason, want) {
					t.Errorf("reason %q does not say %q", reason, want)
				}
			}
			clk.Step(tt.wantDelay - time.Millisecond)
			if _, waiting := b.waiting(pod.UID); !waiting {
				t.Errorf("back-off ended before %v", tt.wantDelay)
			}
			clk.Step(time.Millisecond)
			if _, waiting := b.waiting(pod.UID); waiting {
				t.Errorf("back-off lasts past %v", tt.wantDelay)
			}
			waitActivated(t, act, "default/member")
		})
	}
}

// waitActivated waits until the pod was activated.
func waitActivated(t *testing.T, act *activations, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	for {
		act.mu.Lock()
		done := slices.Contains(act.pods, key)
		act.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s was not activated when its back-off ended", key)
		case <-time.After(10 * time.Millisecond):
		}
	}
}
