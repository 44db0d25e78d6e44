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

	"github.com/tessera-gpu/tessera/nodelease"
)

// createLeaseNamespace creates the namespace the daemons keep the nodes'
// Leases in by default, as the chart's release namespace would be.
func (cp *ControlPlane) createLeaseNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: nodelease.DefaultNamespace}}
	if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating namespace %s for the nodes' Leases: %w", nodelease.DefaultNamespace, err)
	}
	return nil
}

// RenewNodeLease renews node's Lease in the default namespace at renewed,
// creating it if needed, as the node's device plugin would: a GPUNode
// written by a test is offered only while its Lease is fresh.
func RenewNodeLease(ctx context.Context, t testing.TB, kube kubernetes.Interface, node string, renewed time.Time) {
	t.Helper()
	leases := kube.CoordinationV1().Leases(nodelease.DefaultNamespace)
	lease, err := leases.Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		lease = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Namespace: nodelease.DefaultNamespace}}
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
