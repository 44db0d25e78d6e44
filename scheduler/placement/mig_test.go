package placement

import (
	"reflect"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// mig is an idle MIG instance of the GPU with the given index.
func mig(uuid string, parent int32, profile string, memoryMiB int64) Device {
	return Device{UUID: uuid, Index: parent, Model: "NVIDIA A100-SXM4-80GB MIG " + profile, MemoryMiB: memoryMiB,
		Cores: 100, ShareLimit: 1, Healthy: true, MIGProfile: profile}
}

// mixedNode has GPU 0 in MIG mode (a 3g.40gb and two 1g.10gb instances)
// and GPU 1 whole.
func mixedNode(extra ...func(*Device)) *Node {
	small := mig("MIG-small", 0, "1g.10gb", 9856)
	for _, o := range extra {
		o(&small)
	}
	return node(mig("MIG-big", 0, "3g.40gb", 40192), small, mig("MIG-small2", 0, "1g.10gb", 9856), gpu(1))
}

func TestFitMIG(t *testing.T) {
	withSel := func(r *Request, sel gpurequest.Selection) *Request { r.Selection = sel; return r }
	tests := []struct {
		name       string
		node       *Node
		req        *Request
		want       [][]string
		wantCounts map[Reason]int32
		// wantAlloc, when set, is the first container's first device.
		wantAlloc *gpuv1alpha1.DeviceAllocation
	}{
		{
			name:      "a profile annotation gets an instance of that profile, whole",
			node:      mixedNode(),
			req:       withSel(request(app("a", 1, 0, 0)), gpurequest.Selection{MIGProfiles: []string{"1g.10gb"}}),
			want:      [][]string{{"MIG-small"}},
			wantAlloc: &gpuv1alpha1.DeviceAllocation{UUID: "MIG-small", Index: 0, MemoryMiB: 9856, Cores: 100},
		},
		{
			name: "the profile as a GPU type",
			node: mixedNode(),
			req:  withSel(request(app("a", 1, 0, 0)), gpurequest.Selection{Types: []string{"3g.40gb"}}),
			want: [][]string{{"MIG-big"}},
		},
		{
			name:      "a memory request no bigger than an instance takes the whole instance",
			node:      mixedNode(),
			req:       withSel(request(app("a", 1, 8000, 30)), gpurequest.Selection{Mode: gpurequest.ModeMIG}),
			want:      [][]string{{"MIG-small"}},
			wantAlloc: &gpuv1alpha1.DeviceAllocation{UUID: "MIG-small", Index: 0, MemoryMiB: 9856, Cores: 100},
		},
		{
			name:       "a memory request bigger than every instance of the profile fits none",
			node:       mixedNode(),
			req:        withSel(request(app("a", 1, 20000, 0)), gpurequest.Selection{MIGProfiles: []string{"1g.10gb"}}),
			wantCounts: map[Reason]int32{ReasonMIGProfile: 2, ReasonMemory: 2},
		},
		{
			name:       "an instance is never shared",
			node:       mixedNode(used(9856, 100, 1)),
			req:        withSel(request(app("a", 1, 1000, 10), app("b", 1, 1000, 10)), gpurequest.Selection{MIGProfiles: []string{"1g.10gb"}}),
			wantCounts: map[Reason]int32{ReasonMIGProfile: 2, ReasonExclusiveTaken: 1},
		},
		{
			name: "two containers get two instances",
			node: mixedNode(),
			req:  withSel(request(app("a", 1, 1000, 10), app("b", 1, 1000, 10)), gpurequest.Selection{MIGProfiles: []string{"1g.10gb"}}),
			want: [][]string{{"MIG-small"}, {"MIG-small2"}},
		},
		{
			name:       "a container asking for two GPUs gets no MIG instances",
			node:       mixedNode(),
			req:        withSel(request(app("a", 2, 0, 0)), gpurequest.Selection{Mode: gpurequest.ModeMIG}),
			wantCounts: map[Reason]int32{ReasonMIGProfile: 1, ReasonMIGCount: 3},
		},
		{
			name: "hami-core mode keeps the pod off the MIG instances",
			node: mixedNode(),
			req:  withSel(request(app("a", 1, 1000, 10)), gpurequest.Selection{Mode: gpurequest.ModeShared}),
			want: [][]string{{"GPU-1"}},
		},
		{
			name: "the whole GPU beside a MIG-mode GPU is still shared",
			node: mixedNode(func(d *Device) { d.Healthy = false }),
			req:  withSel(request(app("a", 1, 1000, 10), app("b", 1, 1000, 10)), gpurequest.Selection{Types: []string{"A100-SXM4-80GB"}, ExcludeTypes: []string{"MIG"}}),
			want: [][]string{{"GPU-1"}, {"GPU-1"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, failure := Fit(tt.node, tt.req)
			var f Failure
			if feasible := new(Fitter).Feasible(tt.node, tt.req, &f); feasible != (failure == nil) {
				t.Errorf("Feasible() = %v, Fit failure = %v", feasible, failure)
			}
			if tt.want != nil {
				if failure != nil {
					t.Fatalf("Fit() failed: %v", failure)
				}
				if g := uuids(got); !reflect.DeepEqual(g, tt.want) {
					t.Errorf("Fit() GPUs = %v, want %v", g, tt.want)
				}
				if tt.wantAlloc != nil && !reflect.DeepEqual(got[0].Devices[0], *tt.wantAlloc) {
					t.Errorf("allocation %+v, want %+v", got[0].Devices[0], *tt.wantAlloc)
				}
				return
			}
			if failure == nil {
				t.Fatalf("Fit() = %v, want a failure", uuids(got))
			}
			var wantCounts [NumReasons]int32
			for r, n := range tt.wantCounts {
				wantCounts[r] = n
			}
			if failure.Counts != wantCounts {
				t.Errorf("failure counts = %v, want %v (%v)", failure.Counts, wantCounts, failure)
			}
		})
	}
}

// TestMIGFailureNamesTheProfile pins the words of a pod whose MIG
// profile no GPU of the node is: they name NVIDIA's resource of the
// profile, which such a pod wrote, and a pod in MIG mode is told that a
// GPU is no MIG instance, not that its type does not match.
func TestMIGFailureNamesTheProfile(t *testing.T) {
	tests := []struct {
		name string
		sel  gpurequest.Selection
		want string
	}{
		{"one profile", gpurequest.Selection{MIGProfiles: []string{"3g.20gb"}},
			"node(s) had 0/4 GPUs that fit (4 not a nvidia.com/mig-3g.20gb instance)"},
		{"two profiles", gpurequest.Selection{MIGProfiles: []string{"2g.20gb", "3g.20gb"}},
			"node(s) had 0/4 GPUs that fit (4 not a nvidia.com/mig-2g.20gb or nvidia.com/mig-3g.20gb instance)"},
		{"MIG mode", gpurequest.Selection{Mode: gpurequest.ModeMIG, UUIDs: []string{"GPU-1"}},
			"node(s) had 0/1 of the pod's selected GPUs that fit (GPU-1, index 1: not a MIG instance)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(app("a", 1, 0, 0))
			req.Selection = tt.sel
			if _, failure := Fit(mixedNode(), req); failure == nil || failure.Error() != tt.want {
				t.Errorf("failure %v, want %q", failure, tt.want)
			}
		})
	}
}

// TestNewNodeReadsMIGInstances pins that a GPUNode's MIG instances reach
// placement as such.
func TestNewNodeReadsMIGInstances(t *testing.T) {
	gn := &gpuv1alpha1.GPUNode{Status: gpuv1alpha1.GPUNodeStatus{Devices: []gpuv1alpha1.GPUDevice{
		{UUID: "MIG-a", MemoryMiB: 9856, Cores: 100, ShareLimit: 1, Health: gpuv1alpha1.GPUHealthy, MIG: &gpuv1alpha1.MIGInstance{ParentUUID: "GPU-p", Profile: "1g.10gb"}},
		{UUID: "GPU-q", MemoryMiB: 81920, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy},
	}}}
	n := NewNode(gn, nil)
	if n.Devices[0].MIGProfile != "1g.10gb" || n.Devices[1].MIGProfile != "" {
		t.Errorf("devices %+v", n.Devices)
	}
}
