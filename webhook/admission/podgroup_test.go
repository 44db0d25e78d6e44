package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// podGroupsServed is a PodGroupAPI with a fixed answer.
type podGroupsServed bool

func (s podGroupsServed) PodGroupsServed(context.Context) bool { return bool(s) }

// TestMutateWarnsOfAPodGroupTheClusterDropsSilently pins the warning a GPU
// pod that names a PodGroup gets where the cluster does not serve
// PodGroups, in every mode, and that no other pod gets it.
func TestMutateWarnsOfAPodGroupTheClusterDropsSilently(t *testing.T) {
	dra := DefaultConfig()
	dra.Mode = ModeDRA
	tests := []struct {
		name     string
		cfg      Config
		served   bool
		podGroup string
		limits   []string
		want     bool
	}{
		{name: "a GPU pod of a PodGroup the cluster does not serve", cfg: DefaultConfig(), podGroup: "trainer", limits: []string{"nvidia.com/gpumem", "4000"}, want: true},
		{name: "the same in DRA mode", cfg: dra, podGroup: "trainer", limits: []string{"nvidia.com/gpu", "1"}, want: true},
		{name: "a cluster that serves PodGroups", cfg: DefaultConfig(), served: true, podGroup: "trainer", limits: []string{"nvidia.com/gpumem", "4000"}},
		{name: "a GPU pod of no PodGroup", cfg: DefaultConfig(), limits: []string{"nvidia.com/gpumem", "4000"}},
		{name: "a pod of a PodGroup that asks for no GPU", cfg: DefaultConfig(), podGroup: "trainer", limits: []string{"cpu", "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmitter(t, tc.cfg)
			a.podGroups = podGroupsServed(tc.served)
			p := pod(limited("main", tc.limits...))
			if tc.podGroup != "" {
				p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(tc.podGroup)}
			}
			resp := a.Mutate(testContext(t), createRequest(t, p))
			if !resp.Allowed {
				t.Fatalf("Mutate refused the pod: %s", resp.Result.Message)
			}
			got := strings.Join(resp.Warnings, "\n")
			warned := strings.Contains(got, "PodGroup")
			if warned != tc.want {
				t.Fatalf("warned of the PodGroup: %t, want %t; warnings: %q", warned, tc.want, resp.Warnings)
			}
			for _, word := range []string{`"trainer"`, "scheduling.k8s.io/v1beta1", "GenericWorkload", "tessera-scheduler"} {
				if tc.want && !strings.Contains(got, word) {
					t.Errorf("warning %q does not say %s", got, word)
				}
			}
		})
	}
}
