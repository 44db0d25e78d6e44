package gangs

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// slice is what every pod of gangs mode asks for: a fifth of an 80 GiB
// GPU's memory, as a member of a distributed inference job might.
var slice = harness.Shape{Name: "1 GPU, 16 GiB", Count: 1, MemoryMiB: 16384, Weight: 1}

// gangName is the name of the i-th gang's PodGroup.
func gangName(i int) string { return fmt.Sprintf("bench-gang-%05d", i) }

// members are the names of each gang's pods: the pods of gangs of size
// from the first on, in order. Size 0 makes no gangs.
func members(pods, size int) [][]string {
	if size == 0 {
		return nil
	}
	out := make([][]string, pods/size)
	for g := range out {
		for i := range size {
			out[g] = append(out[g], harness.PodName(g*size+i))
		}
	}
	return out
}

// createGangs creates a PodGroup per gang, with minCount its size, then
// every pod, each naming its gang's PodGroup; with size 0 the pods
// alone.
func createGangs(ctx context.Context, env *harness.ClusterEnv, workers, pods, size int) error {
	start := time.Now()
	kube := env.ControlPlane.Kube
	gangs := 0
	if size > 0 {
		gangs = pods / size
	}
	err := harness.ForEach(ctx, gangs, workers, func(ctx context.Context, g int) error {
		pg := &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: gangName(g), Namespace: harness.Namespace},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
				Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(size)},
			}},
		}
		if _, err := kube.SchedulingV1beta1().PodGroups(harness.Namespace).Create(ctx, pg, metav1.CreateOptions{FieldManager: harness.FieldManager}); err != nil {
			return fmt.Errorf("creating PodGroup %s: %w", pg.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = harness.ForEach(ctx, pods, workers, func(ctx context.Context, i int) error {
		pod := harness.NewPod(harness.PodName(i), env.SchedulerName, slice, harness.FormSlices)
		if size > 0 {
			pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(gangName(i / size))}
		}
		if _, err := kube.CoreV1().Pods(harness.Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: harness.FieldManager}); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Created gangs", "podGroups", gangs, "pods", pods, "duration", time.Since(start).Round(time.Millisecond))
	return nil
}
