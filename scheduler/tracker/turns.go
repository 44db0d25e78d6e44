package tracker

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// NewTurnVerifier returns the gate's verifier: it reads a turn's allocation
// and pod from the API server and says the turn is over on the evidence
// the tracker's events would have brought (the allocation served, failed,
// gone or replaced; the pod gone, replaced or finished), so that a watch
// that lags or an event that was missed does not hold a node's binds up.
// It never ends a turn the device plugin may still serve: an allocation
// still pending for a pod that is there stays in flight. A turn whose bind
// lost the answer to its allocation's create (inflight.Gate.Lost) is read
// by the pod's name, and is over when the pod has no allocation on the
// node.
func NewTurnVerifier(v *view.View, kube kubernetes.Interface, tessera versioned.Interface) inflight.Verifier {
	return func(ctx context.Context, t inflight.Turn) (bool, error) {
		name := t.Lost
		if p, ok := v.Pod(t.PodUID); ok {
			name = types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
		}
		if name.Name == "" {
			// Nothing is known to name it by; the time-to-live ends it.
			return true, nil
		}
		over := func(why string) (bool, error) {
			klog.FromContext(ctx).V(2).Info("Ended a node's in-flight turn that the API says is over",
				"node", t.Node, "pod", klog.KRef(name.Namespace, name.Name), "reason", why, "since", t.Since)
			return false, nil
		}
		a, err := tessera.GpuV1alpha1().GPUAllocations(name.Namespace).Get(ctx, name.Name, metav1.GetOptions{})
		switch {
		case errors.IsNotFound(err):
			return over("the allocation is gone")
		case err != nil:
			return true, fmt.Errorf("reading the allocation of pod %s: %w", name, err)
		case t.Allocation == "" && (a.Spec.PodUID != t.PodUID || a.Spec.NodeName != t.Node):
			// The bind lost the answer to its create, which made nothing here.
			return over("the pod has no allocation on the node")
		case t.Allocation != "" && a.UID != t.Allocation:
			return over("the allocation was replaced")
		case a.Status.Phase == gpuv1alpha1.AllocationAllocated, a.Status.Phase == gpuv1alpha1.AllocationFailed:
			return over("the allocation is " + string(a.Status.Phase))
		}
		pod, err := kube.CoreV1().Pods(name.Namespace).Get(ctx, name.Name, metav1.GetOptions{})
		switch {
		case errors.IsNotFound(err):
			return over("the pod is gone")
		case err != nil:
			return true, fmt.Errorf("reading pod %s: %w", name, err)
		case pod.UID != t.PodUID:
			return over("the pod was replaced")
		case PodDone(pod):
			return over("the pod has finished")
		}
		return true, nil
	}
}
