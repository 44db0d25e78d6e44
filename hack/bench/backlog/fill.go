package backlog

import (
	"context"
	"time"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// fillCluster places pods on the view until no shape of its mix fits any
// node (backlogView.fill), and creates them already running where they
// were placed, named from the first pod on, as the row's scheduler would
// have left them: with their Allocated GPUAllocations, or in formClaim
// their allocated claims.
func fillCluster(ctx context.Context, env *harness.ClusterEnv, view *backlogView, form harness.PodForm, workers int) ([]filledPod, error) {
	filled := view.fill()
	start := time.Now()
	err := harness.ForEach(ctx, len(filled), workers, func(ctx context.Context, i int) error {
		f := filled[i]
		pod := harness.NewPod(harness.PodName(i), env.SchedulerName, view.mix[f.shape], form)
		pod.Spec.NodeName = f.node
		if form == harness.FormClaim {
			return harness.CreateAllocatedClaimPod(ctx, env, pod, view.mix[f.shape], f.containers[0].Devices)
		}
		return harness.CreateAllocatedPod(ctx, env, pod, f.containers[0].Devices)
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Filled the cluster", "pods", len(filled), "duration", time.Since(start).Round(time.Second))
	return filled, nil
}
