package scheduler

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/test/framework"
)

// testRestart stops the extender (in plugin mode, tessera-scheduler) in the
// middle of a burst of 200 pods and starts it again: every pod is placed in
// the end and no GPU is over-committed.
func testRestart(ctx context.Context, t *testing.T, e *env) {
	const (
		group = "restart"
		pods  = 200
	)
	// 6 nodes x 4 GPUs x 10 shares: room for 240 pods of 10 cores.
	for i := range 6 {
		e.addNode(ctx, t, fmt.Sprintf("restart-%d", i), group, 10, a100(0), a100(0), a100(1), a100(1))
	}
	slice := ctr{name: "main", count: 1, memory: 4000, core: 10}

	var wg sync.WaitGroup
	names := make(chan string, pods)
	for i := range pods {
		names <- fmt.Sprintf("restart-%03d", i)
	}
	close(names)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for name := range names {
				if _, err := e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, gpuPod(name, group, nil, slice), metav1.CreateOptions{}); err != nil {
					t.Errorf("creating %s: %v", name, err)
				}
			}
		}()
	}

	// Stop the scheduler once the burst is well under way.
	framework.WaitFor(t, 2*time.Minute, "40 allocations before the restart", func() (bool, string) {
		list, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(list.Items) >= 40, fmt.Sprintf("%d allocations", len(list.Items))
	})
	e.restartScheduler(t)
	wg.Wait()

	start := time.Now()
	for i := range pods {
		e.waitBound(ctx, t, fmt.Sprintf("restart-%03d", i))
	}
	t.Logf("all %d pods placed %s after the restart", pods, time.Since(start).Round(time.Millisecond))
	e.checkNoOvercommit(ctx, t)
}
