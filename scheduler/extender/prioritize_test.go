package extender

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

func TestPrioritize(t *testing.T) {
	slice := []string{"nvidia.com/gpu=1", "nvidia.com/gpumem=20000", "nvidia.com/gpucores=30"}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		higher    string // the node that must score higher
		lower     string
		wantError string
	}{
		{name: "binpack by default prefers the busier node", pod: podSpec("p", nil, slice...), higher: "a100-1", lower: "a100-2"},
		{name: "spread annotation prefers the emptier node", pod: podSpec("p", map[string]string{"tessera.dev/node-policy": "spread"}, slice...), higher: "a100-2", lower: "a100-1"},
		{name: "HAMi spread annotation prefers the emptier node", pod: podSpec("p", map[string]string{"hami.io/node-scheduler-policy": "spread"}, slice...), higher: "a100-2", lower: "a100-1"},
		{name: "a node the pod does not fit scores lowest", pod: podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=70000"), higher: "a100-2", lower: "t4"},
		{name: "a node without GPUNode scores lowest", pod: podSpec("p", map[string]string{"tessera.dev/node-policy": "spread"}, slice...), higher: "a100-2", lower: "no-gpunode"},
		{name: "invalid request names the field", pod: podSpec("p", nil, "nvidia.com/gpumem-percentage=101"), wantError: "must be at most 100"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.place("busy", "uid-busy", "a100-1-gpu0", 40000, 40)
			names := []string{"a100-1", "a100-2", "t4", "no-gpunode"}
			scores, _, err := f.prioritize(&extenderv1.ExtenderArgs{Pod: tc.pod, NodeNames: &names})
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Fatalf("err = %v, want %q", err, tc.wantError)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			byNode := map[string]int64{}
			for _, s := range scores {
				if s.Score < extenderv1.MinExtenderPriority || s.Score > extenderv1.MaxExtenderPriority {
					t.Errorf("%s scored %d, outside 0-10", s.Host, s.Score)
				}
				byNode[s.Host] = s.Score
			}
			if len(byNode) != len(names) {
				t.Errorf("scored %v, want every node of %v", scores, names)
			}
			if byNode[tc.higher] <= byNode[tc.lower] {
				t.Errorf("%s scored %d, %s %d; want the first higher", tc.higher, byNode[tc.higher], tc.lower, byNode[tc.lower])
			}
		})
	}
}
