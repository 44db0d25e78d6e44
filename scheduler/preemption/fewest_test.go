package preemption

import (
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// held is a pod holding memory MiB on one GPU of node n.
type held struct {
	uid    types.UID
	gpu    string
	memory int64
}

func TestFewest(t *testing.T) {
	tests := []struct {
		name string
		pods []held
		// candidates are the lower-priority pods, least important first.
		candidates  []types.UID
		want        []types.UID
		wantGPU     string
		wantFailure bool
	}{{
		name:       "the fewest on one GPU, not a bit on each",
		pods:       []held{{"a", "GPU-0", 6000}, {"b", "GPU-1", 6000}, {"c", "GPU-0", 6000}, {"d", "GPU-1", 6000}},
		candidates: []types.UID{"a", "b", "c", "d"},
		// One pod gone frees 9000 MiB on its GPU, short of 10000: d, the
		// most important, is given back, c is not (then no GPU had
		// room), b is (GPU-0 is empty), a is not.
		want: []types.UID{"a", "c"}, wantGPU: "GPU-0",
	}, {
		name:       "the least important go first",
		pods:       []held{{"a", "GPU-0", 10000}, {"b", "GPU-1", 10000}},
		candidates: []types.UID{"b", "a"},
		want:       []types.UID{"b"}, wantGPU: "GPU-1",
	}, {
		name:        "evicting them all leaves no room",
		pods:        []held{{"a", "GPU-0", 10000}, {"high", "GPU-0", 6000}, {"high2", "GPU-1", 6000}},
		candidates:  []types.UID{"a"},
		wantFailure: true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := view.New()
			gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
			for i := range 2 {
				gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
					UUID: fmt.Sprintf("GPU-%d", i), Index: int32(i), Model: "Tesla T4", MemoryMiB: 15000, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
				})
			}
			v.SetGPUNode(gn)
			for _, p := range tc.pods {
				v.Place(&gpuv1alpha1.GPUAllocation{
					ObjectMeta: metav1.ObjectMeta{Name: string(p.uid), Namespace: "ns", UID: "alloc-" + p.uid},
					Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: p.uid, NodeName: "n", Containers: []gpuv1alpha1.ContainerAllocation{{
						Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: p.gpu, MemoryMiB: p.memory}},
					}}},
				})
			}
			req, err := placement.NewRequest([]gpurequest.ContainerRequest{{Name: "main", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryMiB: 10000}}, gpurequest.Selection{}, gpurequest.Spread)
			if err != nil {
				t.Fatal(err)
			}
			v.Read([]string{"n"}, "", func(_ string, n *view.Node) {
				victims, containers, failure := Fewest(n, req, tc.candidates)
				if tc.wantFailure {
					if failure == nil {
						t.Errorf("victims %v, want no room", victims)
					}
					return
				}
				if failure != nil {
					t.Fatalf("no room: %v", failure)
				}
				if !slices.Equal(victims, tc.want) {
					t.Errorf("victims %v, want %v", victims, tc.want)
				}
				if got := containers[0].Devices[0].UUID; got != tc.wantGPU {
					t.Errorf("the pod would get %s, want %s", got, tc.wantGPU)
				}
			})
		})
	}
}
