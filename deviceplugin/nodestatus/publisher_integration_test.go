package nodestatus

import (
	"context"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/inventory"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestPublisherAgainstAPIServer publishes through a real kube-apiserver:
// creation owned by the Node, every status field, the heartbeat, cordons,
// health, readiness, and re-creation after a deletion.
func TestPublisherAgainstAPIServer(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	node := framework.CreateReadyNode(ctx, t, cp.Kube, "gpu-node-1", nil)

	inv := inventory.New(gpu.Inventory{DriverVersion: "simulated", Devices: []gpu.Device{
		{UUID: "GPU-a", Index: 0, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, NUMANode: 0, Health: gpu.Healthy()},
		{UUID: "GPU-b", Index: 1, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, NUMANode: 1, Health: gpu.Healthy()},
		{UUID: "GPU-c", Index: 2, Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81920, NUMANode: -1, Health: gpu.Healthy()},
	}})
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	var cordoned []string
	p := New(Config{
		NodeName: node.Name, Tessera: cp.Tessera, Kube: cp.Kube, Clock: clk,
		Scaling: Scaling{SplitCount: 5, MemoryScaling: 2, CoreScaling: 1},
		Period:  time.Minute, Source: inv, Cordoned: func() []string { return cordoned },
	})
	get := func() *gpuv1alpha1.GPUNode {
		t.Helper()
		n, err := cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, node.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}

	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	n := get()
	if len(n.OwnerReferences) != 1 || n.OwnerReferences[0].Kind != "Node" || n.OwnerReferences[0].UID != node.UID {
		t.Errorf("owner references %+v, want the Node", n.OwnerReferences)
	}
	s := n.Status
	if s.DriverVersion != "simulated" || s.GPUCount != 3 || s.Models != "NVIDIA A100-SXM4-40GB,NVIDIA H100 80GB HBM3" ||
		s.MemoryMiB != 2*(40960*2+81920) || s.AllocatableMemoryMiB != s.MemoryMiB {
		t.Errorf("summary %+v", s)
	}
	if len(s.Devices) != 3 || s.Devices[1] != (gpuv1alpha1.GPUDevice{UUID: "GPU-b", Index: 1, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 81920, Cores: 100, ShareLimit: 5, NUMANode: 1, Health: gpuv1alpha1.GPUHealthy}) ||
		s.Devices[2].NUMANode != -1 || s.Devices[0].NUMANode != 0 {
		t.Errorf("devices %+v", s.Devices)
	}
	if !s.LastHeartbeatTime.Time.Equal(clk.Now()) {
		t.Errorf("heartbeat %v, want %v", s.LastHeartbeatTime, clk.Now())
	}
	ready := meta.FindStatusCondition(s.Conditions, gpuv1alpha1.GPUNodeReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonNotRegistered {
		t.Errorf("Ready condition %+v, want False/NotRegistered before registration", ready)
	}
	for _, f := range n.ManagedFields {
		if f.Manager == FieldManager && f.Subresource != "status" && f.Operation == metav1.ManagedFieldsOperationApply {
			t.Errorf("the plugin applied the main resource: %+v", f)
		}
	}

	// Registered, an hour later: Ready moves, the heartbeat follows; an
	// administrator's cordon and a failed GPU leave the allocatable memory.
	clk.Step(time.Hour)
	p.SetReadiness(Readiness{Ready: true, Reason: ReasonRegistered, Message: "serving"})
	cordoned = []string{"GPU-c"}
	inv.SetHealth(gpu.HealthEvent{UUID: "GPU-a", Health: gpu.Unhealthy("XID 79 critical error")})
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	s = get().Status
	if s.AllocatableMemoryMiB != 81920 || s.Devices[0].Health != gpuv1alpha1.GPUUnhealthy || s.Devices[0].HealthMessage != "XID 79 critical error" {
		t.Errorf("after cordon and failure: allocatable %d, device 0 %+v", s.AllocatableMemoryMiB, s.Devices[0])
	}
	ready = meta.FindStatusCondition(s.Conditions, gpuv1alpha1.GPUNodeReady)
	if ready.Status != metav1.ConditionTrue || !ready.LastTransitionTime.Time.Equal(clk.Now()) || !s.LastHeartbeatTime.Time.Equal(clk.Now()) {
		t.Errorf("Ready %+v heartbeat %v, want True since %v", ready, s.LastHeartbeatTime, clk.Now())
	}
	transition := ready.LastTransitionTime

	// A heartbeat keeps the transition time and recovers the GPU.
	clk.Step(time.Minute)
	inv.SetHealth(gpu.HealthEvent{UUID: "GPU-a", Health: gpu.Healthy()})
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	s = get().Status
	ready = meta.FindStatusCondition(s.Conditions, gpuv1alpha1.GPUNodeReady)
	if !ready.LastTransitionTime.Equal(&transition) || !s.LastHeartbeatTime.Time.Equal(clk.Now()) || s.Devices[0].HealthMessage != "" || s.Devices[0].Health != gpuv1alpha1.GPUHealthy {
		t.Errorf("after a heartbeat: Ready %+v heartbeat %v device 0 %+v", ready, s.LastHeartbeatTime, s.Devices[0])
	}

	// Deleted by someone: published again.
	if err := cp.Tessera.GpuV1alpha1().GPUNodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The first write finds it gone; the next creates it again.
	if err := p.Publish(ctx); !apierrors.IsNotFound(err) {
		t.Errorf("first publish after deletion: %v, want NotFound", err)
	}
	if err := p.Publish(ctx); err != nil {
		t.Fatalf("publishing after the GPUNode was deleted: %v", err)
	}
	if got := get().Status.GPUCount; got != 3 {
		t.Errorf("re-created GPUNode has %d GPUs, want 3", got)
	}
}

func TestPublisherRunHeartbeats(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	inv := inventory.New(gpu.Inventory{DriverVersion: "simulated", Devices: []gpu.Device{{UUID: "GPU-a", Model: "A100", MemoryMiB: 1, Health: gpu.Healthy()}}})
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	p := New(Config{NodeName: "no-node-object", Tessera: cp.Tessera, Kube: cp.Kube, Clock: clk,
		Scaling: Scaling{SplitCount: 1, MemoryScaling: 1, CoreScaling: 1}, Period: 15 * time.Second, Source: inv})
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	heartbeatAt := func(want time.Time) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for time.Now().Before(deadline) {
			n, err := cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, "no-node-object", metav1.GetOptions{})
			if err == nil && n.Status.LastHeartbeatTime != nil && n.Status.LastHeartbeatTime.Time.Equal(want) {
				if len(n.OwnerReferences) != 0 {
					t.Errorf("owner references %+v without a Node", n.OwnerReferences)
				}
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("no heartbeat at %v", want)
	}
	heartbeatAt(clk.Now())
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(15 * time.Second)
	heartbeatAt(clk.Now())
	// A trigger publishes at once, between heartbeats.
	clk.SetTime(clk.Now().Add(time.Second))
	p.Trigger()
	heartbeatAt(clk.Now())
}
