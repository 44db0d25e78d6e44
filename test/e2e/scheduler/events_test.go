package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// testOneFailedSchedulingEvent creates a pod no GPU can hold and checks
// that it is told so once. With the extender it is told twice, a few
// milliseconds apart: kube-scheduler retries a pod an extender turned away
// on any change, its own PodScheduled condition included, and records the
// same event again. The plugin's queueing hints retry it only when GPUs
// may have freed up. An event that the plugin's view was not yet synced
// does not count: kube-scheduler retries such a pod after its back-off,
// and the first subtest may come that early on a loaded machine.
func testOneFailedSchedulingEvent(ctx context.Context, t *testing.T, e *env) {
	const group = "events"
	e.addNode(ctx, t, "events-1", group, 10, t4())
	e.createPod(ctx, t, gpuPod("too-big", group, nil, ctr{name: "main", count: 1, memory: 100000}))
	e.waitFailedScheduling(ctx, t, "too-big", "not enough memory")
	// The extender's second event came within milliseconds of the first;
	// a few seconds leave room for a slow machine.
	time.Sleep(3 * time.Second)
	list, err := e.cp.Kube.CoreV1().Events(namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=too-big,reason=FailedScheduling"})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, ev := range list.Items {
		if !strings.Contains(ev.Message, "not yet synced") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the pod got %d FailedScheduling events, want 1: %s", n, e.events(ctx, "too-big"))
	}
	e.deletePod(ctx, t, "too-big")
}
