package scheduler

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// testUnservable sends the extender pods the webhook would have fixed or
// refused, as a pod labelled tessera.dev/webhook=disabled reaches it (this
// environment runs no webhook): a slice with no GPU count, which the
// kubelet would never ask the device plugin about, and a privileged
// container with a slice. Each stays Pending with a reason that says what
// to change, gets no allocation, and does not hold up the next pod on the
// node.
func testUnservable(ctx context.Context, t *testing.T, e *env) {
	const group = "unservable"
	e.addNode(ctx, t, "unservable-1", group, 10, t4())

	e.createPod(ctx, t, gpuPod("no-count", group, nil, ctr{name: "main", memory: 1000}))
	e.waitFailedScheduling(ctx, t, "no-count", "add nvidia.com/gpu: 1 to its resources.limits")

	privileged := gpuPod("privileged-slice", group, nil, ctr{name: "main", count: 1, memory: 1000})
	privileged.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
	e.createPod(ctx, t, privileged)
	e.waitFailedScheduling(ctx, t, "privileged-slice", "securityContext.privileged: Forbidden")

	for _, name := range []string{"no-count", "privileged-slice"} {
		if _, err := e.cp.Tessera.GpuV1alpha1().GPUAllocations(namespace).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("pod %s has an allocation (err %v), want none", name, err)
		}
	}
	// The node's turn is free: the next pod binds at once, and gets its
	// own allocation.
	e.createPod(ctx, t, gpuPod("after-unservable", group, nil, ctr{name: "main", count: 1, memory: 1000}))
	e.waitBound(ctx, t, "after-unservable")
	for _, name := range []string{"no-count", "privileged-slice", "after-unservable"} {
		e.deletePod(ctx, t, name)
	}
}
