package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// Namespace holds every pod and allocation of a run.
const Namespace = "bench"

// PodName is the name of the i-th pod.
func PodName(i int) string { return fmt.Sprintf("bench-pod-%06d", i) }

// PodForm is how the workload's pods ask for their GPUs.
type PodForm int

const (
	// FormSlices asks for the GPU count, memory and cores as extended
	// resources, as HAMi-style pods do (rows b, c, d).
	FormSlices PodForm = iota
	// formWholeGPU asks for the GPU count only, since kube-scheduler
	// alone knows nothing of memory or cores (row a).
	formWholeGPU
	// FormClaim asks through a ResourceClaim of its own, created with the
	// pod, for the shape's GPUs with its memory and cores as consumed
	// capacity (row e).
	FormClaim
)

// RowForm is how the row's pods ask for their GPUs.
func RowForm(row string) PodForm {
	switch row {
	case RowKubeScheduler:
		return formWholeGPU
	case RowDRA:
		return FormClaim
	default:
		return FormSlices
	}
}

// GPULimits are the limits a container of the shape asks for in the form.
func GPULimits(s Shape, form PodForm) corev1.ResourceList {
	if form == FormClaim {
		return nil
	}
	names := gpurequest.DefaultResourceNames()
	limits := corev1.ResourceList{names.Count: *resource.NewQuantity(s.Count, resource.DecimalSI)}
	if form == formWholeGPU {
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

// NewPod is a pod of the shape for the scheduler profile, as the admission
// webhook would leave it: the GPU count set and the scheduler name Tessera's.
// In formClaim its container uses the claim named like the pod.
func NewPod(name, schedulerName string, s Shape, form PodForm) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace, Labels: map[string]string{"app": "bench"}},
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
					Limits: GPULimits(s, form),
				},
			}},
		},
	}
	if form == FormClaim {
		pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: claimName, ResourceClaimName: ptr.To(name)}}
		pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: claimName}}
	}
	return pod
}

// CreateTimes records when each pod was created, by name. A pod's
// creationTimestamp has only second precision, too coarse for latencies.
type CreateTimes struct {
	mu sync.Mutex
	at map[string]time.Time
}

func (c *CreateTimes) set(name string, t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at[name] = t
}

func (c *CreateTimes) get(name string) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t, ok := c.at[name]
	return t, ok
}

// CreatePods creates a pod of each shape, unscheduled, named from the
// first-th pod on, each in formClaim after its claim, and returns when
// each was created.
func CreatePods(ctx context.Context, env *ClusterEnv, workers int, shapes []Shape, first int, form PodForm) (*CreateTimes, error) {
	times := &CreateTimes{at: make(map[string]time.Time, len(shapes))}
	start := time.Now()
	err := ForEach(ctx, len(shapes), workers, func(ctx context.Context, i int) error {
		pod := NewPod(PodName(first+i), env.SchedulerName, shapes[i], form)
		if env.FitGate {
			pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: gpuv1alpha1.FitSchedulingGate}}
		}
		if form == FormClaim {
			claim := ResourceClaim(pod.Name, shapes[i])
			if _, err := env.ControlPlane.Kube.ResourceV1().ResourceClaims(Namespace).Create(ctx, claim, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
				return fmt.Errorf("creating claim %s: %w", claim.Name, err)
			}
		}
		if _, err := env.ControlPlane.Kube.CoreV1().Pods(Namespace).Create(ctx, pod, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("creating pod %s: %w", pod.Name, err)
		}
		times.set(pod.Name, time.Now())
		return nil
	})
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Created pods", "pods", len(shapes), "duration", time.Since(start).Round(time.Millisecond))
	return times, nil
}
