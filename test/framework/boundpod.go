package framework

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// CreateBoundPod creates the pod in the default namespace, bound to node,
// and, when containers are given, the GPUAllocation of them that the
// scheduler extender would have written for it, owned by the pod.
func CreateBoundPod(ctx context.Context, t testing.TB, cp *ControlPlane, node string, pod *corev1.Pod, containers ...gpuv1alpha1.ContainerAllocation) *corev1.Pod {
	t.Helper()
	pod.Namespace = metav1.NamespaceDefault
	pod.Spec.NodeName = node
	pod, err := cp.Kube.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(containers) == 0 {
		return pod
	}
	_, err = cp.Tessera.GpuV1alpha1().GPUAllocations(pod.Namespace).Create(ctx, &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID}}},
		Spec:       gpuv1alpha1.GPUAllocationSpec{PodUID: pod.UID, NodeName: node, Containers: containers},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pod
}
