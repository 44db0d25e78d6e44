package admission

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
	"github.com/tessera-gpu/tessera/test/fixtures"
)

// TestMutateForDRAGivesAPodInMIGModeTheProfilePlacementChooses writes the
// claims of pods on a cluster whose DRA node has an A100 that makes its
// MIG instances on demand, and evaluates each claim's selectors against
// the devices the node daemon publishes for it: a pod in MIG mode gets,
// as its first choice, only instances of the profile placement chooses
// (the smallest that holds its memory and cores, the largest when it
// names no memory), and a pod in hami-core mode, one that names no mode
// and one that names a profile get none of them.
func TestMutateForDRAGivesAPodInMIGModeTheProfilePlacementChooses(t *testing.T) {
	node := draNode("dyn", 81920)
	node.Status.Devices[0].MIGGeometry = fixtures.A100MIGGeometry()
	res := dra.Resources("dyn", []gpu.Device{{UUID: "GPU-dyn", Model: "NVIDIA A100-SXM4-80GB", MemoryMiB: 81920, Health: gpu.Healthy(), MIGGeometry: fixtures.A100MIGGeometry()}},
		nil, nodestatus.Scaling{SplitCount: 7, MemoryScaling: 1, CoreScaling: 1})
	var instances []resourceapi.Device
	for _, s := range res.Pools["dyn"].Slices {
		instances = append(instances, s.Devices...)
	}
	tests := []struct {
		name        string
		annotations map[string]string
		limits      []string
		want        string // the profile of the first choice's instances; "" for none
	}{
		{name: "memory the smallest profile holds", annotations: map[string]string{"nvidia.com/vgpu-mode": "mig"}, limits: []string{"nvidia.com/gpumem", "8000"}, want: "1g.10gb"},
		{name: "memory only a larger profile holds", annotations: map[string]string{"nvidia.com/vgpu-mode": "mig"}, limits: []string{"nvidia.com/gpumem", "30000"}, want: "3g.40gb"},
		{name: "cores only a larger profile holds", annotations: map[string]string{"tessera.dev/gpu-mode": "mig"}, limits: []string{"nvidia.com/gpumem", "8000", "nvidia.com/gpucores", "20"}, want: "2g.20gb"},
		{name: "no memory named", annotations: map[string]string{"nvidia.com/vgpu-mode": "mig"}, want: "7g.80gb"},
		{name: "hami-core mode", annotations: map[string]string{"nvidia.com/vgpu-mode": "hami-core"}, limits: []string{"nvidia.com/gpumem", "8000"}},
		{name: "no mode", limits: []string{"nvidia.com/gpumem", "8000"}},
		{name: "a profile named", annotations: map[string]string{"tessera.dev/mig-profile": "1g.10gb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, kube := draAdmitter(t, node)
			p := pod(limited("cuda", append([]string{"nvidia.com/gpu", "1"}, tt.limits...)...))
			p.Annotations = tt.annotations
			out, templates := mutateDRA(t, a, kube, p)
			request := claimOf(t, out, &out.Spec.Containers[0], templates).Spec.Spec.Devices.Requests[0]
			selectors := func() []resourceapi.DeviceSelector {
				if request.Exactly != nil {
					return request.Exactly.Selectors
				}
				return request.FirstAvailable[0].Selectors
			}()
			var got []string
			for _, d := range instances {
				if matches(t, selectors, dracel.Device{Driver: gpuv1alpha1.DRADriverName, Attributes: d.Attributes, Capacity: d.Capacity}) {
					got = append(got, *d.Attributes[gpuv1alpha1.DRAAttributeMIGProfile].StringValue)
				}
			}
			want := 0
			for _, pr := range fixtures.A100MIGGeometry().Profiles {
				if pr.Name == tt.want {
					want = len(pr.Placements)
				}
			}
			if len(got) != want || (want > 0 && got[0] != tt.want) {
				t.Errorf("the first choice selects the instances %v, want the %d of %q", got, want, tt.want)
			}
		})
	}
}
