package scheduler

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testBurst submits 10 pods at once for one node: they all bind, one in
// flight at a time, and no GPU is over-committed.
func testBurst(ctx context.Context, t *testing.T, e *env) {
	const group = "burst"
	e.addNode(ctx, t, "burst-1", group, 10, a100(0), a100(0))
	slice := ctr{name: "main", count: 1, memory: 16000, core: 20}

	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			pod := gpuPod(fmt.Sprintf("burst-%d", i), group, nil, slice)
			if _, err := e.cp.Kube.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Errorf("creating %s: %v", pod.Name, err)
			}
		}()
	}
	wg.Wait()
	var served []time.Time
	for i := range 10 {
		name := fmt.Sprintf("burst-%d", i)
		e.waitBound(ctx, t, name)
		served = append(served, e.plugin.ServedAt(namespace, name))
	}
	sort.Slice(served, func(i, j int) bool { return served[i].Before(served[j]) })
	// One in flight at a time: each allocation is served after the one before.
	t.Logf("10 pods served one after another over %s", served[len(served)-1].Sub(served[0]).Round(time.Millisecond))
	e.checkNoOvercommit(ctx, t)
	e.checkOneInFlight(t)
	for i := range 10 {
		e.deletePod(ctx, t, fmt.Sprintf("burst-%d", i))
	}
}
