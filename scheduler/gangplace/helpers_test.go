package gangplace

import (
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// gpuMiB is the memory of every GPU of the tests' nodes.
const gpuMiB = 16000

// node is a node of the tests: its name and the memory taken on each of
// its GPUs.
type node struct {
	name string
	used []int64
}

// cluster returns a view of the nodes, each GPU shared by up to 10.
func cluster(nodes ...node) *view.View {
	v := view.New()
	for _, n := range nodes {
		gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: n.name}}
		for i, used := range n.used {
			uuid := fmt.Sprintf("%s-gpu%d", n.name, i)
			gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
				UUID: uuid, Index: int32(i), Model: "A100", MemoryMiB: gpuMiB, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
			})
			if used == 0 {
				continue
			}
			uid := types.UID(uuid + "-pod")
			v.Place(&gpuv1alpha1.GPUAllocation{
				ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "ns", UID: uid},
				Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: uid, NodeName: n.name, Containers: []gpuv1alpha1.ContainerAllocation{{
					Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: uuid, MemoryMiB: used}},
				}}},
			})
		}
		v.SetGPUNode(gn)
	}
	return v
}

// gang is size requests for one GPU with memoryMiB each.
func gang(t testing.TB, size int, memoryMiB int64) []*placement.Request {
	t.Helper()
	reqs := make([]*placement.Request, size)
	for i := range reqs {
		req, err := placement.NewRequest([]gpurequest.ContainerRequest{{Name: "main", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryMiB: memoryMiB}},
			gpurequest.Selection{}, gpurequest.Spread)
		if err != nil {
			t.Fatal(err)
		}
		reqs[i] = req
	}
	return reqs
}

// names lists the nodes' names.
func nodeNames(nodes []node) []string {
	out := make([]string, len(nodes))
	for i, n := range nodes {
		out[i] = n.name
	}
	return out
}

// every opens every node.
func every(*view.Node) bool { return true }
