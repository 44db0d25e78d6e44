package scheduler

import (
	"testing"
	"time"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestPluginPlacesAReleasedPodBeforeItsUnpark checks that a parked pod a
// free releases is placed while the API server still refuses to take its
// parked label off, as it would while the unpark queues behind others:
// kube-scheduler is shown the pod at once, binds it with the label on, and
// the label comes off once the API server lets it.
func TestPluginPlacesAReleasedPodBeforeItsUnpark(t *testing.T) {
	e := startPluginEnv(t)
	ctx := t.Context()
	const group, node, waits = "unparklate", "unparklate-1", "unparklate-waits"
	e.createPriorityClasses(ctx, t)
	e.addNode(ctx, t, node, group, 10, a100(0))
	e.createPod(ctx, t, lowPod("unparklate-filler", group, 40960))
	e.waitBound(ctx, t, "unparklate-filler")
	e.createPod(ctx, t, lowPod(waits, group, 61440))
	e.held().WaitPodParked(ctx, t, 60*time.Second, waits, true)

	allow := e.cp.RefuseUnparking(ctx, t, namespace, waits)
	e.deletePod(ctx, t, "unparklate-filler")
	pod, alloc := e.waitBound(ctx, t, waits)
	if pod.Labels[gpuv1alpha1.ParkedLabel] == "" {
		t.Fatalf("%s was bound with its label off: the API server did not refuse the unpark", waits)
	}
	if alloc.Spec.NodeName != node {
		t.Errorf("%s's allocation is on %q, want %s", waits, alloc.Spec.NodeName, node)
	}
	allow()
	e.held().WaitPodParked(ctx, t, 90*time.Second, waits, false)
	e.checkNoOvercommit(ctx, t)
}
