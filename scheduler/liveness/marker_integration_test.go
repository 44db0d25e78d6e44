package liveness

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/test/framework"
)

const maxAge = time.Minute

// TestMarkerAgainstAPIServer runs the Marker on a real kube-apiserver with
// a fake clock: a node whose Lease goes past the age is marked once, with
// only its Ready condition changed; a fresh node, a node already not
// ready, and a node whose Lease is renewed in time are left alone. Ages are
// the Marker's own: a node whose clock is 10 minutes behind and renews in
// time is left alone, and one whose clock is 10 minutes ahead and stops
// renewing is marked after the age, not 10 minutes later.
func TestMarkerAgainstAPIServer(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	clk := testingclock.NewFakeClock(time.Now())
	start := clk.Now()

	// skew is how far each node's clock is off the scheduler's.
	skew := map[string]time.Duration{"behind": -10 * time.Minute, "ahead": 10 * time.Minute}
	gpuNode := func(name string, ready metav1.ConditionStatus, reason string) {
		t.Helper()
		gn, err := cp.Tessera.GpuV1alpha1().GPUNodes().Create(ctx, &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		gn.Status = gpuv1alpha1.GPUNodeStatus{
			DriverVersion: "simulated", GPUCount: 1,
			Devices:    []gpuv1alpha1.GPUDevice{{UUID: "GPU-" + name, Model: "A100", MemoryMiB: 1024, Cores: 100, ShareLimit: 1, Health: gpuv1alpha1.GPUHealthy}},
			Conditions: []metav1.Condition{{Type: gpuv1alpha1.GPUNodeReady, Status: ready, Reason: reason, LastTransitionTime: metav1.NewTime(start)}},
		}
		if _, err := cp.Tessera.GpuV1alpha1().GPUNodes().UpdateStatus(ctx, gn, metav1.UpdateOptions{FieldManager: "tessera-device-plugin"}); err != nil {
			t.Fatal(err)
		}
		framework.RenewNodeLease(ctx, t, cp.Kube, name, start.Add(skew[name]))
	}
	gpuNode("dies", metav1.ConditionTrue, "Registered")
	gpuNode("lives", metav1.ConditionTrue, "Registered")
	gpuNode("behind", metav1.ConditionTrue, "Registered")
	gpuNode("ahead", metav1.ConditionTrue, "Registered")
	gpuNode("stopped", metav1.ConditionFalse, "Stopped")

	tf := externalversions.NewSharedInformerFactory(cp.Tessera, 0)
	kf := informers.NewSharedInformerFactoryWithOptions(cp.Kube, 0, informers.WithNamespace(gpuv1alpha1.DefaultNodeLeaseNamespace))
	renewals := NewRenewals(clk)
	m, err := New(ctx, Config{
		Tessera: cp.Tessera, FieldManager: FieldManager,
		GPUNodes: tf.Gpu().V1alpha1().GPUNodes(), Leases: kf.Coordination().V1().Leases(), Namespace: gpuv1alpha1.DefaultNodeLeaseNamespace,
		Renewals: renewals, Clock: clk, MaxAge: maxAge,
	})
	if err != nil {
		t.Fatal(err)
	}
	tf.Start(ctx.Done())
	kf.Start(ctx.Done())
	done := make(chan struct{})
	go func() { m.Run(ctx); close(done) }()
	defer func() { cancel(); <-done; tf.Shutdown(); kf.Shutdown() }()

	ready := func(name string) (*metav1.Condition, *gpuv1alpha1.GPUNode) {
		t.Helper()
		gn, err := cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return meta.FindStatusCondition(gn.Status.Conditions, gpuv1alpha1.GPUNodeReady), gn
	}
	// Each node is checked, its Lease seen for the first time and so
	// counted as renewed now, and due again a second after the age.
	waitFor(t, "each node's Lease to be seen", func() bool {
		renewals.mu.Lock()
		defer renewals.mu.Unlock()
		return len(renewals.seen) == 5
	})
	time.Sleep(200 * time.Millisecond) // the last check schedules the next

	// Half the age later, one node's plugin renews its Lease.
	clk.Step(maxAge / 2)
	framework.RenewNodeLease(ctx, t, cp.Kube, "lives", clk.Now())
	framework.RenewNodeLease(ctx, t, cp.Kube, "behind", clk.Now().Add(skew["behind"]))
	time.Sleep(200 * time.Millisecond) // the Lease's event reaches the Marker
	clk.Step(maxAge/2 + 2*time.Second)

	waitFor(t, "node dies to be marked stale", func() bool {
		c, _ := ready("dies")
		return c.Status == metav1.ConditionUnknown
	})
	c, gn := ready("dies")
	if c.Reason != gpuv1alpha1.GPUNodeHeartbeatStale || !strings.Contains(c.Message, "has not renewed its Lease for 1m2s") ||
		!strings.Contains(c.Message, "allows 1m0s") || !c.LastTransitionTime.Time.Equal(clk.Now().Truncate(time.Second)) {
		t.Errorf("Ready of the stale node %+v", c)
	}
	if gn.Status.GPUCount != 1 || len(gn.Status.Devices) != 1 || gn.Status.DriverVersion != "simulated" {
		t.Errorf("the mark changed more than Ready: %+v", gn.Status)
	}
	var marker bool
	for _, f := range gn.ManagedFields {
		marker = marker || f.Manager == FieldManager && f.Subresource == "status" && f.Operation == metav1.ManagedFieldsOperationApply
	}
	if !marker {
		t.Errorf("no status apply by the marker's field manager in %+v", gn.ManagedFields)
	}
	marked := gn.ResourceVersion

	waitFor(t, "node ahead, whose clock is 10 minutes ahead, to be marked stale", func() bool {
		c, _ := ready("ahead")
		return c.Status == metav1.ConditionUnknown
	})
	if c, _ := ready("lives"); c.Status != metav1.ConditionTrue {
		t.Errorf("node whose Lease was renewed in time: Ready %+v", c)
	}
	if c, _ := ready("behind"); c.Status != metav1.ConditionTrue {
		t.Errorf("node whose clock is 10 minutes behind, renewed in time: Ready %+v", c)
	}
	if c, _ := ready("stopped"); c.Status != metav1.ConditionFalse || c.Reason != "Stopped" {
		t.Errorf("node already not ready: Ready %+v, want its own reason kept", c)
	}

	// Later checks of the marked node write nothing more.
	clk.Step(maxAge)
	time.Sleep(500 * time.Millisecond)
	if _, gn := ready("dies"); gn.ResourceVersion != marked {
		t.Errorf("a marked node was written again")
	}
	// The other node, not renewed since, goes stale too.
	waitFor(t, "node lives to be marked stale in turn", func() bool {
		c, _ := ready("lives")
		return c.Status == metav1.ConditionUnknown
	})
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
