package nodestatus

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/inventory"
	gpuac "github.com/tessera-gpu/tessera/generated/applyconfiguration/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	gpulisters "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// nodeCache is the plugin's informer on its own GPUNode.
type nodeCache struct {
	t      *testing.T
	cp     *framework.ControlPlane
	name   string
	lister gpulisters.GPUNodeLister
}

func newNodeCache(ctx context.Context, t *testing.T, cp *framework.ControlPlane, name string) *nodeCache {
	factory := externalversions.NewSharedInformerFactoryWithOptions(cp.Tessera, 0,
		externalversions.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	lister := factory.Gpu().V1alpha1().GPUNodes().Lister()
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	t.Cleanup(factory.Shutdown)
	return &nodeCache{t: t, cp: cp, name: name, lister: lister}
}

// get returns the GPUNode from the API, once the cache holds the same.
func (c *nodeCache) get(ctx context.Context) *gpuv1alpha1.GPUNode {
	c.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, c.name, metav1.GetOptions{})
		if err != nil {
			c.t.Fatal(err)
		}
		if cached, err := c.lister.Get(c.name); err == nil && cached.ResourceVersion == n.ResourceVersion {
			return n
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("the cache never caught up with GPUNode %s", c.name)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPublisherAgainstAPIServer publishes through a real kube-apiserver:
// creation owned by the Node, every status field, cordons, health,
// readiness, no write when nothing changed, and re-creation after a
// deletion.
func TestPublisherAgainstAPIServer(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	node := framework.CreateReadyNode(ctx, t, cp.Kube, "gpu-node-1", nil)
	cache := newNodeCache(ctx, t, cp, node.Name)
	inv := inventory.New(gpu.Inventory{DriverVersion: "simulated", Devices: []gpu.Device{
		{UUID: "GPU-a", Index: 0, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, NUMANode: 0, Health: gpu.Healthy()},
		{UUID: "GPU-b", Index: 1, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, NUMANode: 1, Health: gpu.Healthy()},
		{UUID: "GPU-c", Index: 2, Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81920, NUMANode: -1, Health: gpu.Healthy()},
	}})
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	var cordoned []string
	p := New(Config{
		NodeName: node.Name, Tessera: cp.Tessera, GPUNodes: cache.lister, Kube: cp.Kube, Clock: clk,
		Scaling: Scaling{SplitCount: 5, MemoryScaling: 2, CoreScaling: 1},
		Period:  time.Minute, Source: inv, Cordoned: func() []string { return cordoned },
	})
	publish := func() *gpuv1alpha1.GPUNode {
		t.Helper()
		if err := p.Publish(ctx); err != nil {
			t.Fatal(err)
		}
		return cache.get(ctx)
	}

	n := publish()
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
	ready := meta.FindStatusCondition(s.Conditions, gpuv1alpha1.GPUNodeReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != ReasonNotRegistered {
		t.Errorf("Ready condition %+v, want False/NotRegistered before registration", ready)
	}
	for _, f := range n.ManagedFields {
		if f.Manager == FieldManager && f.Subresource != "status" && f.Operation == metav1.ManagedFieldsOperationApply {
			t.Errorf("the plugin applied the main resource: %+v", f)
		}
	}

	// Registered, an hour later: Ready moves; an administrator's cordon and
	// a failed GPU leave the allocatable memory.
	clk.Step(time.Hour)
	p.SetReadiness(Readiness{Ready: true, Reason: ReasonRegistered, Message: "serving"})
	cordoned = []string{"GPU-c"}
	inv.SetHealth(gpu.HealthEvent{UUID: "GPU-a", Health: gpu.Unhealthy("XID 79 critical error")})
	s = publish().Status
	if s.AllocatableMemoryMiB != 81920 || s.Devices[0].Health != gpuv1alpha1.GPUUnhealthy || s.Devices[0].HealthMessage != "XID 79 critical error" {
		t.Errorf("after cordon and failure: allocatable %d, device 0 %+v", s.AllocatableMemoryMiB, s.Devices[0])
	}
	ready = meta.FindStatusCondition(s.Conditions, gpuv1alpha1.GPUNodeReady)
	if ready.Status != metav1.ConditionTrue || !ready.LastTransitionTime.Time.Equal(clk.Now()) {
		t.Errorf("Ready %+v, want True since %v", ready, clk.Now())
	}

	// Nothing changed a minute later: nothing is written.
	clk.Step(time.Minute)
	before := cache.get(ctx).ResourceVersion
	if after := publish().ResourceVersion; after != before {
		t.Errorf("an unchanged status was written again: resource version %s, then %s", before, after)
	}

	// The GPU recovers: written, with Ready's transition time kept.
	inv.SetHealth(gpu.HealthEvent{UUID: "GPU-a", Health: gpu.Healthy()})
	s = publish().Status
	ready = meta.FindStatusCondition(s.Conditions, gpuv1alpha1.GPUNodeReady)
	if !ready.LastTransitionTime.Time.Equal(clk.Now().Add(-time.Minute)) || s.Devices[0].HealthMessage != "" || s.Devices[0].Health != gpuv1alpha1.GPUHealthy {
		t.Errorf("after recovery: Ready %+v device 0 %+v", ready, s.Devices[0])
	}

	// Deleted by someone: once the plugin's cache has seen it go, which
	// triggers the plugin, published again.
	if err := cp.Tessera.GpuV1alpha1().GPUNodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := cache.lister.Get(node.Name); apierrors.IsNotFound(err) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := publish().Status.GPUCount; got != 3 {
		t.Errorf("re-created GPUNode has %d GPUs, want 3", got)
	}
}

// oneGPUNode starts a control plane for node gpu-node-1 with one GPU and
// returns the plugin's cache of its GPUNode, a fake clock, and a maker of
// publishers for it, counting the Lease's renewals with renewals if set.
func oneGPUNode(t *testing.T) (context.Context, *nodeCache, *testingclock.FakeClock, func(renewals func() uint64) *Publisher) {
	cp := framework.Start(t, framework.Options{})
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	cache := newNodeCache(ctx, t, cp, "gpu-node-1")
	// Registered after the cache's shutdown, so that it runs first.
	t.Cleanup(cancel)
	inv := inventory.New(gpu.Inventory{DriverVersion: "simulated", Devices: []gpu.Device{
		{UUID: "GPU-a", Index: 0, Model: "NVIDIA A100-SXM4-40GB", MemoryMiB: 40960, Health: gpu.Healthy()},
	}})
	clk := testingclock.NewFakeClock(time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC))
	return ctx, cache, clk, func(renewals func() uint64) *Publisher {
		return New(Config{NodeName: "gpu-node-1", Tessera: cp.Tessera, GPUNodes: cache.lister, Kube: cp.Kube, Clock: clk,
			Scaling: Scaling{SplitCount: 1, MemoryScaling: 1, CoreScaling: 1}, Period: time.Minute, Source: inv, Renewals: renewals})
	}
}

// TestRestartedPublisherWritesNothing: a plugin that starts again on a
// node whose GPUNode already says what it would say writes nothing, before
// it has registered with the kubelet or after.
func TestRestartedPublisherWritesNothing(t *testing.T) {
	ctx, cache, clk, newPublisher := oneGPUNode(t)
	serving := Readiness{Ready: true, Reason: ReasonRegistered, Message: "serving 1 GPU"}
	first := newPublisher(nil)
	first.SetReadiness(serving)
	if err := first.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	written := cache.get(ctx).ResourceVersion

	clk.Step(time.Hour)
	restarted := newPublisher(nil)
	if err := restarted.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if rv := cache.get(ctx).ResourceVersion; rv != written {
		t.Errorf("the restarted plugin wrote before registering: resource version %s, then %s", written, rv)
	}
	restarted.SetReadiness(serving)
	if err := restarted.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	n := cache.get(ctx)
	if n.ResourceVersion != written {
		t.Errorf("the restarted plugin rewrote an unchanged status: resource version %s, then %s", written, n.ResourceVersion)
	}
	if c := meta.FindStatusCondition(n.Status.Conditions, gpuv1alpha1.GPUNodeReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready %+v, want True", c)
	}
}

// TestPublisherTakesBackStaleMark: the scheduler marks the node stale by
// applying the Ready condition under its own field manager, which leaves
// the rest of the plugin's status alone; the plugin sets Ready back once
// it has renewed its Lease since it saw the mark, and not before.
func TestPublisherTakesBackStaleMark(t *testing.T) {
	ctx, cache, clk, newPublisher := oneGPUNode(t)
	cp := cache.cp
	var renewals atomic.Uint64
	p := newPublisher(renewals.Load)
	p.SetReadiness(Readiness{Ready: true, Reason: ReasonRegistered, Message: "serving 1 GPU"})
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	n := cache.get(ctx)
	mark := gpuac.GPUNode("gpu-node-1").WithResourceVersion(n.ResourceVersion).WithStatus(gpuac.GPUNodeStatus().WithConditions(
		metav1ac.Condition().WithType(gpuv1alpha1.GPUNodeReady).WithStatus(metav1.ConditionUnknown).
			WithReason(gpuv1alpha1.GPUNodeHeartbeatStale).WithMessage("stale").WithLastTransitionTime(metav1.NewTime(clk.Now()))))
	if _, err := cp.Tessera.GpuV1alpha1().GPUNodes().ApplyStatus(ctx, mark, metav1.ApplyOptions{FieldManager: "scheduler", Force: true}); err != nil {
		t.Fatal(err)
	}
	n = cache.get(ctx)
	if c := meta.FindStatusCondition(n.Status.Conditions, gpuv1alpha1.GPUNodeReady); c.Status != metav1.ConditionUnknown || n.Status.GPUCount != 1 || len(n.Status.Devices) != 1 {
		t.Fatalf("after the stale mark: Ready %+v, %d GPUs, devices %+v: the mark must change only Ready", c, n.Status.GPUCount, n.Status.Devices)
	}

	// Its Lease not yet renewed since: the mark stays.
	clk.Step(time.Minute)
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(cache.get(ctx).Status.Conditions, gpuv1alpha1.GPUNodeReady); c.Status != metav1.ConditionUnknown {
		t.Errorf("Ready %+v before the Lease was renewed, want the mark kept", c)
	}
	renewals.Add(1)
	if err := p.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	n = cache.get(ctx)
	c := meta.FindStatusCondition(n.Status.Conditions, gpuv1alpha1.GPUNodeReady)
	if c.Status != metav1.ConditionTrue || c.Reason != ReasonRegistered || !c.LastTransitionTime.Time.Equal(clk.Now()) {
		t.Errorf("Ready %+v, want True again since %v", c, clk.Now())
	}
}
