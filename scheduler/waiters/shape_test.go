package waiters

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// unorderedPods are n GPU pods of two shapes and three priorities, each
// created a second after the one before, shuffled.
func unorderedPods(n int) []*v1.Pod {
	pods := make([]*v1.Pod, n)
	for i := range pods {
		pod := gpuPod(fmt.Sprintf("p-%06d", i), int64(10240*(1+i%2)))
		pod.CreationTimestamp = metav1.NewTime(time.Unix(int64(i), 0))
		priority := int32(i % 3)
		pod.Spec.Priority = &priority
		pods[i] = pod
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(n, func(i, j int) { pods[i], pods[j] = pods[j], pods[i] })
	return pods
}

// TestJoinKeepsQueueOrder checks that pods asked about in no order, as at
// a scheduler's start, wait in each shape in queue order.
func TestJoinKeepsQueueOrder(t *testing.T) {
	r := NewQueue(nil, klog.Background(), view.New(), nil, view.Rules{})
	pods := unorderedPods(3000)
	for _, pod := range pods {
		r.Asked(pod, request(t, pod))
	}
	if len(r.shapes) != 2 {
		t.Fatalf("%d shapes, want 2", len(r.shapes))
	}
	joined := 0
	for _, s := range r.shapes {
		joined += len(s.pods)
		if !slices.IsSortedFunc(s.pods, func(a, b *waiter) int { return QueueOrder(a.pod, a.priority, b.pod, b.priority) }) {
			t.Errorf("shape %s: pods not in queue order", s.key)
		}
	}
	if joined != len(pods) {
		t.Errorf("%d pods joined, want %d", joined, len(pods))
	}
}

// BenchmarkJoinUnordered is a new Queue taking in a backlog of pods in
// no order, as when a scheduler judges every waiting pod at its start.
func BenchmarkJoinUnordered(b *testing.B) {
	for _, n := range []int{10000, 100000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			pods := unorderedPods(n)
			reqs := make([]*placement.Request, n)
			for i, pod := range pods {
				reqs[i] = request(b, pod)
			}
			for b.Loop() {
				rq := NewQueue(nil, klog.Background(), view.New(), nil, view.Rules{})
				for i, pod := range pods {
					rq.Asked(pod, reqs[i])
				}
			}
		})
	}
}
