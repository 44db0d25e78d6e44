package extender

import (
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/extenderargs"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// benchCluster builds a view of nodes with 8 GPUs each and podsPerNode pods
// on every node, each holding 8000 MiB and 10 cores of one GPU.
func benchCluster(b *testing.B, nodes, podsPerNode int) (*view.View, []string) {
	b.Helper()
	v := view.New()
	names := make([]string, nodes)
	hb := metav1.NewTime(time.Now())
	for i := range nodes {
		name := fmt.Sprintf("node-%05d", i)
		names[i] = name
		gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: name}}
		for g := range 8 {
			gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
				UUID: fmt.Sprintf("GPU-%05d-%d", i, g), Index: int32(g), Model: "NVIDIA A100-SXM4-80GB",
				MemoryMiB: 81920, Cores: 100, ShareLimit: 10, NUMANode: int32(g / 4), Health: gpuv1alpha1.GPUHealthy,
			})
		}
		v.SetGPUNode(gn)
		v.SetLease(name, hb.Time)
		for p := range podsPerNode {
			uid := types.UID(fmt.Sprintf("pod-%05d-%d", i, p))
			v.Place(&gpuv1alpha1.GPUAllocation{
				ObjectMeta: metav1.ObjectMeta{Name: string(uid), Namespace: "bench", UID: "a-" + uid},
				Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: uid, NodeName: name, Containers: []gpuv1alpha1.ContainerAllocation{{
					Name: "main", Kind: gpuv1alpha1.ContainerApp,
					Devices: []gpuv1alpha1.DeviceAllocation{{UUID: fmt.Sprintf("GPU-%05d-%d", i, (i+p)%8), MemoryMiB: 8000, Cores: 10}},
				}}},
			})
		}
	}
	return v, names
}

// BenchmarkFilterPrioritize is one pod's filter and prioritize calls, as
// kube-scheduler makes them, over every node of the cluster.
func BenchmarkFilterPrioritize(b *testing.B) {
	for _, size := range []struct{ nodes, podsPerNode int }{
		{1000, 0}, {1000, 8}, {5000, 0}, {5000, 8},
	} {
		b.Run(fmt.Sprintf("nodes=%d/pods=%d", size.nodes, size.nodes*size.podsPerNode), func(b *testing.B) {
			v, names := benchCluster(b, size.nodes, size.podsPerNode)
			ext := New(Config{
				View: v, Clock: clock.RealClock{},
				ResourceNames:     gpurequest.DefaultResourceNames(),
				DefaultNodePolicy: gpurequest.Binpack, DefaultGPUPolicy: gpurequest.Spread,
				HeartbeatMaxAge: time.Hour,
			})
			pod := podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000", "nvidia.com/gpucores=20")
			ctx := b.Context()
			var filtered filterAnswer
			var scored priorityAnswer
			var filterArgs, prioritizeArgs extenderargs.Args
			b.ReportAllocs()
			for b.Loop() {
				filterArgs.Set(extenderv1.ExtenderArgs{Pod: pod, NodeNames: &names})
				ext.filter(ctx, &filterArgs, &filtered)
				if len(filtered.feasible) != size.nodes {
					b.Fatalf("%d feasible nodes, want %d: %s", len(filtered.feasible), size.nodes, filtered.err)
				}
				prioritizeArgs.Set(extenderv1.ExtenderArgs{Pod: pod, NodeNames: &filtered.feasible})
				if _, err := ext.prioritize(ctx, &prioritizeArgs, &scored); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
