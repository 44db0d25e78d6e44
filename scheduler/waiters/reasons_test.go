package waiters

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestHeldReasonsSkipPodsNoLongerHeld checks that a pod released before
// its turn to be told is not written: it is being scheduled or is bound,
// and a late write would mark it unschedulable.
func TestHeldReasonsSkipPodsNoLongerHeld(t *testing.T) {
	held, released := gpuPod("held", 1000), gpuPod("released", 1000)
	kube := fake.NewClientset(held, released)
	h := NewReasons(kube, nil, clocktesting.NewFakePassiveClock(time.Unix(100, 0)),
		func(uid types.UID) bool { return uid == held.UID }, nil, "test")
	h.Tell(released, "released since")
	h.Tell(held, "still held")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		h.Run(ctx)
		close(done)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for h.queue.Len() > 0 || len(kube.Actions()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the reasons were not written")
		}
		time.Sleep(time.Millisecond)
	}
	cancel()
	<-done
	for _, pod := range []*v1.Pod{held, released} {
		got, err := kube.CoreV1().Pods(pod.Namespace).Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		told := len(got.Status.Conditions) > 0 && got.Status.Conditions[0].Message != ""
		if want := pod == held; told != want {
			t.Errorf("%s told: %v (conditions %v), want %v", pod.Name, told, got.Status.Conditions, want)
		}
	}
}
