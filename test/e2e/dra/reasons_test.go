package dra

import "testing"

// TestReasonsInTheWordsOfTheOtherModes runs pods written for HAMi through
// the webhook in DRA mode and tessera-scheduler with the shipped DRA
// configuration, over an A100 node and an L4 node. A pod no node could
// ever hold is told why in the words extender and plugin mode use for
// the same pod (test/e2e/scheduler's capacity test), not only that its
// claims cannot be allocated.
func TestReasonsInTheWordsOfTheOtherModes(t *testing.T) {
	c := startTesseraScheduler(t, &simNode{name: "a100", gpus: threeA100}, &simNode{name: "l4", gpus: fourL4})
	c.startWebhook()
	for _, tc := range []struct {
		name, annotation, value string
		limits                  []string
		want                    string
	}{
		{name: "uuids-nowhere", annotation: "nvidia.com/use-gpuuuid", value: "GPU-nowhere", limits: []string{"nvidia.com/gpumem", "1000"},
			want: "GPUs: 2 node(s) had none of the pod's selected GPUs"},
		{name: "no-such-type", annotation: "nvidia.com/use-gputype", value: "H100", limits: []string{"nvidia.com/gpumem", "1000"},
			want: "1 node(s) had 0/3 GPUs that fit (3 type mismatch)"},
		{name: "larger-than-any-gpu", limits: []string{"nvidia.com/gpumem", "90000"},
			want: "1 node(s) had 0/3 GPUs that fit (3 not enough memory)"},
		{name: "no-such-instance", limits: []string{"nvidia.com/mig-2g.10gb", "1"},
			want: "1 node(s) had 0/4 GPUs that fit (4 not a nvidia.com/mig-2g.10gb instance)"},
	} {
		var annotations map[string]string
		if tc.annotation != "" {
			annotations = map[string]string{tc.annotation: tc.value}
		}
		c.createPod(hamiPod(tc.name, annotations, tc.limits...))
		c.waitRefused(tc.name, tc.want)
	}
}
