package framework

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// SystemNamespace is where the daemons keep what is not a node's by
// default (the webhook its certificate, the scheduler its leader-election
// Lease), as the chart's default release namespace.
const SystemNamespace = "tessera-system"

// createNamespaces creates the namespaces the daemons use by default:
// SystemNamespace, and the one of the nodes' Leases, as the chart would.
func (cp *ControlPlane) createNamespaces(ctx context.Context) error {
	for _, name := range []string{SystemNamespace, gpuv1alpha1.DefaultNodeLeaseNamespace} {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating namespace %s: %w", name, err)
		}
	}
	return nil
}

// RenewNodeLease renews node's Lease in the default namespace at renewed,
// creating it if needed, as the node's device plugin would: a GPUNode
// written by a test is offered only while its Lease is fresh.
func RenewNodeLease(ctx context.Context, t testing.TB, kube kubernetes.Interface, node string, renewed time.Time) {
	t.Helper()
	leases := kube.CoordinationV1().Leases(gpuv1alpha1.DefaultNodeLeaseNamespace)
	lease, err := leases.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: gpuv1alpha1.DefaultNodeLeaseNamespace}}
		lease.Spec = coordinationv1.LeaseSpec{HolderIdentity: ptr.To("test"), RenewTime: &metav1.MicroTime{Time: renewed}}
		_, err = leases.Create(ctx, lease, metav1.CreateOptions{})
	} else if err == nil {
		lease.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatalf("renewing the Lease of node %s: %v", node, err)
	}
}
