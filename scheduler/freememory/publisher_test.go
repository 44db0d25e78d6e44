package freememory

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
	listers "github.com/tessera-gpu/tessera/generated/listers/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// gpuNode is a node with two 80 GiB GPUs, the second unhealthy.
func gpuNode(name string) *gpuv1alpha1.GPUNode {
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for i, health := range []gpuv1alpha1.GPUHealth{gpuv1alpha1.GPUHealthy, gpuv1alpha1.GPUUnhealthy} {
		gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
			UUID: fmt.Sprintf("GPU-%s-%d", name, i), Index: int32(i), Model: "A100",
			MemoryMiB: 81920, Cores: 100, ShareLimit: 10, Health: health,
		})
	}
	return gn
}

// fixture is a publisher over a view and lister holding the given GPUNodes.
type fixture struct {
	pub     *Publisher
	view    *view.View
	nodes   cache.Indexer
	tessera *fake.Clientset
	ready   bool
}

func newFixture(t *testing.T, nodes ...*gpuv1alpha1.GPUNode) *fixture {
	f := &fixture{view: view.New(), nodes: cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{}), ready: true}
	var objects []any
	for _, gn := range nodes {
		f.view.SetGPUNode(gn)
		if err := f.nodes.Add(gn); err != nil {
			t.Fatal(err)
		}
		objects = append(objects, gn)
	}
	f.tessera = fake.NewClientset()
	for _, o := range objects {
		if err := f.tessera.Tracker().Add(o.(*gpuv1alpha1.GPUNode)); err != nil {
			t.Fatal(err)
		}
	}
	f.pub = New(f.view, listers.NewGPUNodeLister(f.nodes), f.tessera, clocktesting.NewFakeClock(metav1.Now().Time),
		func() bool { return f.ready }, "test")
	return f
}

// stored returns the free memory the API holds for the node, and makes
// the lister see it, as the informer would.
func (f *fixture) stored(t *testing.T, name string) *int64 {
	gn, err := f.tessera.GpuV1alpha1().GPUNodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.nodes.Update(gn); err != nil {
		t.Fatal(err)
	}
	return gn.Status.FreeMemoryMiB
}

func TestPublish(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	f := newFixture(t, gpuNode("n1"))
	f.view.Place(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "a1"},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: "pod-1", NodeName: "n1", Containers: []gpuv1alpha1.ContainerAllocation{{
			Name: "c", Kind: gpuv1alpha1.ContainerApp,
			Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-n1-0", MemoryMiB: 20000, Cores: 10}},
		}}},
	})

	f.ready = false
	if n := f.pub.Publish(ctx); n != 0 || f.stored(t, "n1") != nil {
		t.Fatalf("published %d before the view was synced", n)
	}
	f.ready = true
	// The unhealthy GPU's memory is not free; the healthy one's is, less
	// what the pod holds.
	if n := f.pub.Publish(ctx); n != 1 {
		t.Fatalf("Publish wrote %d nodes, want 1", n)
	}
	if got := f.stored(t, "n1"); got == nil || *got != 61920 {
		t.Fatalf("free memory = %v, want 61920", ptr.Deref(got, -1))
	}
	if n := f.pub.Publish(ctx); n != 0 {
		t.Errorf("Publish wrote %d nodes with nothing changed, want 0", n)
	}

	f.view.Release("pod-1")
	if n := f.pub.Publish(ctx); n != 1 {
		t.Fatalf("Publish wrote %d nodes after the pod ended, want 1", n)
	}
	if got := f.stored(t, "n1"); got == nil || *got != 81920 {
		t.Errorf("free memory = %v, want 81920", ptr.Deref(got, -1))
	}
}

func TestPublishWritesAtMostMaxWritesARound(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	var nodes []*gpuv1alpha1.GPUNode
	for i := range MaxWrites + 10 {
		nodes = append(nodes, gpuNode(fmt.Sprintf("n%d", i)))
	}
	f := newFixture(t, nodes...)
	if n := f.pub.Publish(ctx); n != MaxWrites {
		t.Fatalf("first round wrote %d nodes, want %d", n, MaxWrites)
	}
	for _, gn := range nodes {
		f.stored(t, gn.Name)
	}
	if n := f.pub.Publish(ctx); n != 10 {
		t.Fatalf("second round wrote %d nodes, want the 10 left", n)
	}
}

// TestPublishLeavesDRANodesToTheirDaemon pins that the extender does not
// write the free memory of a node served through DRA, which its daemon
// publishes from the ResourceClaims the extender does not see.
func TestPublishLeavesDRANodesToTheirDaemon(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	gn := gpuNode("n1")
	gn.Status.KubeletAPI = gpuv1alpha1.KubeletAPIDRA
	gn.Status.FreeMemoryMiB = ptr.To[int64](1000)
	f := newFixture(t, gn)
	if n := f.pub.Publish(ctx); n != 0 {
		t.Errorf("Publish wrote %d nodes, want none", n)
	}
	if got := f.stored(t, "n1"); ptr.Deref(got, -1) != 1000 {
		t.Errorf("free memory = %v, want the daemon's 1000", ptr.Deref(got, -1))
	}
}
