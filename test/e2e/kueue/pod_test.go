package kueue

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// kueueGate is the scheduling gate Kueue's pod webhook puts on a pod in a
// queue and takes off once the pod's Workload is admitted.
const kueueGate = "kueue.x-k8s.io/admission"

// testPlainPod submits a bare pod of a GPU slice, written per GPU only,
// to team-b's queue: Tessera's webhook adds the totals, Kueue gates it,
// admits it to team-b's ClusterQueue counting those totals, ungates it,
// and Tessera places it.
func testPlainPod(ctx context.Context, t *testing.T, e *env, node string) {
	s := slice{gpus: 1, memoryMiB: 10000, cores: 20}
	e.placePlainPod(ctx, t, plainPod("team-b", "notebook", map[string]string{queueLabel: localQueue}, s), node)
	e.waitUsage(t, "team-b", map[corev1.ResourceName]int64{
		gpuv1alpha1.QuotaGPUs: 1, gpuv1alpha1.QuotaMemory: 10000, gpuv1alpha1.QuotaCores: 20,
	})
}

// plainPod is a bare pod of namespace asking for s per GPU only, with
// labels.
func plainPod(namespace, name string, labels map[string]string, s slice) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{
				Name: "lab", Image: "registry.example/lab:1",
				Resources: corev1.ResourceRequirements{Limits: s.perGPU()},
			}},
		},
	}
}

// placePlainPod creates pod, checks that Kueue gated it, and waits until
// Kueue has admitted and ungated it and Tessera has placed it on node. It
// returns the pod as created.
func (e *env) placePlainPod(ctx context.Context, t *testing.T, pod *corev1.Pod, node string) *corev1.Pod {
	t.Helper()
	created, err := e.cp.Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating pod %s/%s: %v", pod.Namespace, pod.Name, err)
	}
	if !hasGate(created) {
		t.Fatalf("pod %s/%s was created without Kueue's scheduling gate: %v", pod.Namespace, pod.Name, created.Spec.SchedulingGates)
	}
	framework.WaitFor(t, time.Minute, "the pod to be admitted, ungated and placed", func() (bool, string) {
		got, err := e.cp.Kube.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		alloc, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		placed := err == nil && alloc.Spec.PodUID == got.UID && got.Spec.NodeName == node
		return !hasGate(got) && placed, fmt.Sprintf("gates %v, node %q, allocation: %v", got.Spec.SchedulingGates, got.Spec.NodeName, err)
	})
	return created
}

func hasGate(pod *corev1.Pod) bool {
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == kueueGate {
			return true
		}
	}
	return false
}
