package extender

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tessera-gpu/tessera/scheduler/metrics"
)

// TestBindsWaitingCounted pins that a bind held by its node's in-flight
// allocation is counted while it waits, and no longer once it goes on.
func TestBindsWaitingCounted(t *testing.T) {
	f := newFixture(t)
	m, err := metrics.NewRequests(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	f.ext.Metrics = m
	f.ext.BindWaitTimeout = time.Minute
	// Another pod is in flight on the node.
	if err := f.gate.Acquire(t.Context(), "a100-1", "other", 0); err != nil {
		t.Fatal(err)
	}
	pod := f.addPod(podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000"))
	done := make(chan string, 1)
	go func() {
		outcome, _ := f.ext.Bind(t.Context(), bindArgs(pod, "a100-1"))
		done <- outcome
	}()
	waiting := func(want float64) {
		t.Helper()
		err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return testutil.ToFloat64(m.BindsWaiting) == want, nil
		})
		if err != nil {
			t.Fatalf("binds waiting = %v, want %v", testutil.ToFloat64(m.BindsWaiting), want)
		}
	}
	waiting(1)
	f.gate.Release("a100-1", "other")
	if outcome := <-done; outcome != metrics.ResultSuccess {
		t.Fatalf("Bind = %s once the node was free, want success", outcome)
	}
	waiting(0)
}
