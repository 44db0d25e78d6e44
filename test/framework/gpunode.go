package framework

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
)

// CreateGPUNode creates the GPUNode of the name and, when status is not
// nil, writes it as the node's device plugin would; it returns the GPUNode
// as the API server last returned it.
func CreateGPUNode(ctx context.Context, t testing.TB, tessera versioned.Interface, name string, status *gpuv1alpha1.GPUNodeStatus) *gpuv1alpha1.GPUNode {
	t.Helper()
	nodes := tessera.GpuV1alpha1().GPUNodes()
	gn, err := nodes.Create(ctx, &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating GPUNode %s: %v", name, err)
	}
	if status == nil {
		return gn
	}
	gn.Status = *status
	if gn, err = nodes.UpdateStatus(ctx, gn, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing GPUNode %s status: %v", name, err)
	}
	return gn
}
