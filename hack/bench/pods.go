package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// benchNamespace holds every pod and allocation of a run.
const benchNamespace = "bench"

// podName is the name of the i-th pod.
func podName(i int) string { return fmt.Sprintf("bench-pod-%06d", i) }

// gpuLimits are the limits a container of the shape asks for. Without an
// extender (wholeGPUOnly) only the GPU count can be asked for, since
// kube-scheduler alone knows nothing of memory or cores.
func gpuLimits(s Shape, wholeGPUOnly bool) corev1.ResourceList {
	names := gpurequest.DefaultResourceNames()
	limits := corev1.ResourceList{names.Count: *resource.NewQuantity(s.Count, resource.DecimalSI)}
	if wholeGPUOnly {
		return limits
	}
	if s.MemoryMiB > 0 {
		limits[names.Memory] = *resource.NewQuantity(s.MemoryMiB, resource.DecimalSI)
	}
	if s.Cores > 0 {
		limits[names.Cores] = *resource.NewQuantity(s.Cores, resource.DecimalSI)
	}
	return limits
}

// newPod is a pod of the shape for the scheduler profile, as the admission
// webhook would leave it: the GPU count set and the scheduler name Tessera's.
func newPod(name, schedulerName string, s Shape, wholeGPUOnly bool) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: benchNamespace, Labels: map[string]string{"app": "bench"}},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			Containers: []corev1.Container{{
				Name:  "cuda",
				Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse("100m"),
						corev1.ResourceMemory: resource.MustParse("128Mi"),
					},
					Limits: gpuLimits(s, wholeGPUOnly),
				},
			}},
		},
	}
}

// createTimes records when each pod was created, by name. A pod's
// creationTimestamp has only second precision, too coarse for latencies.
type createTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (c *createTimes) set(name string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at[name] = t
}

func (c *createTimes) get(name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.at[name]
	return t, ok
}

// createPods creates every pod of the workload, unscheduled, and returns
// when each was created.
func createPods(ctx context.Context, env *clusterEnv, o *Options, wholeGPUOnly bool) (*createTimes, error) {
	shapes := DefaultMix().Sequence(o.Pods)
	times := &createTimes{at: make(map[string]time.Time, o.Pods)}
	start := time.Now()
	err := forEach(ctx, o.Pods, o.Workers, func(ctx context.Context, i int) error {
		pod := newPod(podName(i), env.schedulerName, shapes[i], wholeGPUOnly)
		if _, err := env.cp.Kube.CoreV1().Pods(benchNamespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		times.set(pod.Name, time.Now())
		return nil
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Created pods", "pods", o.Pods, "duration", time.Since(start).Round(time.Millisecond))
	return times, nil
}
