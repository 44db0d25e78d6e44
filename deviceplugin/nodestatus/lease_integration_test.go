package nodestatus

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestLeaseRenewer renews a node's Lease through a real kube-apiserver:
// created owned by the Node and held by the plugin, renewed without a
// read, and created or read again after someone deleted or changed it.
func TestLeaseRenewer(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	node := framework.CreateReadyNode(ctx, t, cp.Kube, "gpu-node-1", nil)
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	r := NewLeaseRenewer(LeaseConfig{NodeName: node.Name, Namespace: gpuv1alpha1.DefaultNodeLeaseNamespace, Holder: "plugin-pod",
		Kube: cp.Kube, Clock: clk, Period: 15 * time.Second})
	leases := cp.Kube.CoordinationV1().Leases(gpuv1alpha1.DefaultNodeLeaseNamespace)
	renewedAt := func(want time.Time) {
		t.Helper()
		if err := r.Renew(ctx); err != nil {
			t.Fatal(err)
		}
		l, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.RenewTime == nil || !l.Spec.RenewTime.Time.Equal(want) || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "plugin-pod" ||
			l.Spec.LeaseDurationSeconds == nil || *l.Spec.LeaseDurationSeconds != 60 {
			t.Errorf("Lease spec %+v, want held by plugin-pod for 60 s, renewed at %v", l.Spec, want)
		}
		if len(l.OwnerReferences) != 1 || l.OwnerReferences[0].UID != node.UID {
			t.Errorf("Lease owners %+v, want the Node", l.OwnerReferences)
		}
	}
	renewedAt(clk.Now())
	clk.Step(15 * time.Second)
	renewedAt(clk.Now())

	// Someone else writes it: the next renewal conflicts, reads and renews.
	l, err := leases.Get(ctx, node.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l.Labels = map[string]string{"touched": "yes"}
	if _, err := leases.Update(ctx, l, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(15 * time.Second)
	renewedAt(clk.Now())

	// Deleted: created again.
	if err := leases.Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	clk.Step(15 * time.Second)
	renewedAt(clk.Now())
}
