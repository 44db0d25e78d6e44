package framework

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// CreateReadyNode creates a Node with the given allocatable resources (also
// its capacity), marks it Ready and removes the not-ready taint that the API
// server adds at creation, since no kubelet or node lifecycle controller
// runs to do it.
func CreateReadyNode(ctx context.Context, t testing.TB, kube kubernetes.Interface, name string, allocatable corev1.ResourceList) *corev1.Node {
	t.Helper()
	node, err := NewReadyNode(ctx, kube, name, allocatable)
	if err != nil {
		t.Fatalf("creating node %s: %v", name, err)
	}
	return node
}

// NewReadyNode is CreateReadyNode for callers that are not tests.
func NewReadyNode(ctx context.Context, kube kubernetes.Interface, name string, allocatable corev1.ResourceList) (*corev1.Node, error) {
	resources := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
	for k, v := range allocatable {
		resources[k] = v
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelHostname: name}},
	}
	node, err := kube.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if err != nil {
		return nil, err
	}
	node.Spec.Taints = nil
	if node, err = kube.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		return nil, err
	}
	now := metav1.Now()
	node.Status.Capacity = resources
	node.Status.Allocatable = resources
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	return kube.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
}
