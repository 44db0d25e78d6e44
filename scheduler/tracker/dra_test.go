package tracker

import (
	"testing"

	"github.com/tessera-gpu/tessera/scheduler/view"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestDRANodesLeaveTheView pins that a node whose daemon serves the
// kubelet through DRA is not Tessera's scheduler's to place on, export or
// publish: kube-scheduler allocates its GPUs in ResourceClaims, which the
// view does not hold.
func TestDRANodesLeaveTheView(t *testing.T) {
	f := newFixture(t)
	inView := func() bool {
		found := false
		f.view.Read([]string{"n1"}, "", func(_ string, n *view.Node) { found = n != nil && n.HasGPUNode && len(n.Placement.Devices) > 0 })
		return found
	}
	if !inView() {
		t.Fatal("the device-plugin node is not in the view")
	}
	gn := &gpuv1alpha1.GPUNode{}
	gn.Name = "n1"
	gn.Status.Devices = []gpuv1alpha1.GPUDevice{{UUID: "gpu0", Model: "A100", MemoryMiB: 80000, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy}}
	gn.Status.KubeletAPI = gpuv1alpha1.KubeletAPIDRA
	f.tracker.gpuNodeHandler().OnUpdate(gn.DeepCopy(), gn)
	if inView() {
		t.Error("the node is still in the view after its daemon turned to DRA")
	}
	gn.Name = "n2"
	f.tracker.gpuNodeHandler().OnAdd(gn, false)
	f.view.Read([]string{"n2"}, "", func(_ string, n *view.Node) {
		if n != nil && n.HasGPUNode {
			t.Error("a DRA node was added to the view")
		}
	})
}
