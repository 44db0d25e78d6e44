package drascore

import (
	"context"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

func TestPostFilterSaysWhyNoNodeCouldEverHold(t *testing.T) {
	const class = gpuv1alpha1.DRADriverName
	// a's first GPU is full: PostFilter judges the GPUs empty all the same.
	id, c := used("a", 0, "24Gi", "100", "10")
	full := structured.ConsumedCapacityCollection{id: c}
	tests := []struct {
		name        string
		slices      []*resourceapi.ResourceSlice
		claim       *resourceapi.ResourceClaim
		annotations map[string]string
		want        string // empty: no reason of Tessera's
	}{
		{name: "a pod that fits once its GPU frees waits without a reason of Tessera's",
			slices: []*resourceapi.ResourceSlice{slice("a", 1, 24)}, claim: claim("c", exactly("gpu", class, 1, "memory", "8Gi"))},
		{name: "more memory than any GPU has, on every node",
			slices: []*resourceapi.ResourceSlice{slice("a", 1, 24, 24), slice("b", 1, 16)}, claim: claim("c", exactly("gpu", class, 1, "memory", "40Gi")),
			want: "GPUs: 1 node(s) had 0/1 GPUs that fit (1 not enough memory), 1 node(s) had 0/2 GPUs that fit (2 not enough memory)"},
		{name: "UUIDs a HAMi-style pod selected that no node holds",
			slices: []*resourceapi.ResourceSlice{slice("a", 1, 24), slice("b", 1, 24)}, claim: claim("c", exactly("gpu", class, 1, "memory", "1Gi")),
			annotations: map[string]string{"nvidia.com/use-gpuuuid": "GPU-nowhere"},
			want:        "GPUs: 2 node(s) had none of the pod's selected GPUs"},
		{name: "a type no GPU is", slices: []*resourceapi.ResourceSlice{slice("a", 1, 24)}, claim: claim("c", exactly("gpu", class, 1)),
			annotations: map[string]string{"nvidia.com/use-gputype": "H100"},
			want:        "GPUs: 1 node(s) had 0/1 GPUs that fit (1 type mismatch)"},
		{name: "a pod that names no mode, where the GPUs make MIG instances on demand",
			slices: dynamicMIGSlices("a"), claim: claim("c", exactly("gpu", class, 1, "memory", "1Gi")),
			want: "GPUs: 1 node(s) had 0/1 GPUs that fit (1 in MIG mode, and the pod does not ask for MIG (nvidia.com/vgpu-mode: mig))"},
		{name: "no node publishes GPUs", claim: claim("c", exactly("gpu", class, 1)),
			want: "GPUs: no node publishes GPUs of gpu.tessera.dev"},
		{name: "a pod without claims of Tessera's classes", slices: []*resourceapi.ResourceSlice{slice("a", 1, 24)},
			claim: claim("c", exactly("nic", "nic.example.com", 1))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &draManager{slices: tc.slices, claims: claims{"c": tc.claim}, consumed: full}
			defaults, err := decodeArgs(nil)
			if err != nil {
				t.Fatal(err)
			}
			p := newPlugin(defaults, m, nil, nil)
			pod := podOf("c")
			pod.Annotations = tc.annotations
			_, status := p.PostFilter(context.Background(), framework.NewCycleState(), pod, nil)
			if status.Code() != fwk.Unschedulable {
				t.Fatalf("PostFilter: %v, want Unschedulable", status)
			}
			if got := status.Message(); got != tc.want {
				t.Errorf("PostFilter says %q, want %q", got, tc.want)
			}
		})
	}
}
