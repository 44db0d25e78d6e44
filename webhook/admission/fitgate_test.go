package admission

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// TestMutateFitGate pins which created pods get the fit gate: the GPU pods
// of a listed extender-mode scheduler, once, after the gates they have.
func TestMutateFitGate(t *testing.T) {
	const fit = gpuv1alpha1.FitSchedulingGate
	gpuPod := func(edit func(p *corev1.Pod)) *corev1.Pod {
		p := pod(limited("main", "nvidia.com/gpumem", "4000"))
		if edit != nil {
			edit(p)
		}
		return p
	}
	gated := func(names ...string) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			for _, n := range names {
				p.Spec.SchedulingGates = append(p.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: n})
			}
		}
	}
	tests := []struct {
		name string
		// cfg edits the default configuration, whose FitGateSchedulers
		// is DefaultSchedulerName.
		cfg     func(c *Config)
		pod     *corev1.Pod
		objects []runtime.Object
		// op is the request's operation; empty: a creation.
		op        admissionv1.Operation
		wantGates []string
	}{
		{
			name:      "GPU pod handed to a listed scheduler is gated",
			pod:       gpuPod(nil),
			wantGates: []string{fit},
		},
		{
			name:      "GPU pod naming a listed scheduler itself is gated",
			pod:       gpuPod(func(p *corev1.Pod) { p.Spec.SchedulerName = DefaultSchedulerName }),
			wantGates: []string{fit},
		},
		{
			name:      "GPU pod of another listed scheduler is gated",
			cfg:       func(c *Config) { c.FitGateSchedulers = []string{DefaultSchedulerName, "gpu-sched-b"} },
			pod:       gpuPod(func(p *corev1.Pod) { p.Spec.SchedulerName = "gpu-sched-b" }),
			wantGates: []string{fit},
		},
		{
			name: "GPU pod of a scheduler not listed is not gated",
			pod:  gpuPod(func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" }),
		},
		{
			name: "GPU pod handed to a scheduler not listed is not gated",
			cfg:  func(c *Config) { c.FitGateSchedulers = []string{"gpu-sched-b"} },
			pod:  gpuPod(nil),
		},
		{
			name: "no scheduler listed gates nothing",
			cfg:  func(c *Config) { c.FitGateSchedulers = nil },
			pod:  gpuPod(nil),
		},
		{
			name: "pod without GPUs is not gated",
			pod:  pod(limited("main", "cpu", "2")),
		},
		{
			name: "pod bound to a node is not gated",
			pod:  gpuPod(func(p *corev1.Pod) { p.Spec.NodeName = "gpu-1" }),
		},
		{
			name: "opted-out pod is not gated",
			pod:  gpuPod(func(p *corev1.Pod) { p.Labels = map[string]string{DefaultOptOutLabel: DefaultOptOutValue} }),
		},
		{
			name: "GPU pod in DRA mode is not gated, even for a listed DRA scheduler",
			cfg: func(c *Config) {
				c.Mode, c.DRASchedulerName = ModeDRA, "tessera-scheduler-dra"
				c.FitGateSchedulers = []string{DefaultSchedulerName, "tessera-scheduler-dra"}
			},
			pod: gpuPod(nil),
		},
		{
			name:    "GPU pod in a namespace labelled for DRA mode is not gated",
			pod:     gpuPod(nil),
			objects: []runtime.Object{namespace(testNamespace, map[string]string{DefaultModeLabel: ModeDRA})},
		},
		{
			name: "an update is let through ungated",
			pod:  gpuPod(nil),
			op:   admissionv1.Update,
		},
		{
			name:      "gates the pod has are kept and the fit gate comes after them",
			pod:       gpuPod(gated("example.com/quota", "example.com/data")),
			wantGates: []string{"example.com/quota", "example.com/data", fit},
		},
		{
			name:      "a pod gated already is not gated twice",
			pod:       gpuPod(gated("example.com/quota", fit)),
			wantGates: []string{"example.com/quota", fit},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			cfg.FitGateSchedulers = []string{DefaultSchedulerName}
			if tc.cfg != nil {
				tc.cfg(&cfg)
			}
			a := newAdmitter(t, cfg, tc.objects...)
			req := createRequest(t, tc.pod)
			if tc.op != "" {
				req.Operation = tc.op
			}
			resp := a.Mutate(testContext(t), req)
			if !resp.Allowed {
				t.Fatalf("Mutate refused the pod: %s", resp.Result.Message)
			}
			got := applyPatch(t, req, resp)
			var names []string
			for _, g := range got.Spec.SchedulingGates {
				names = append(names, g.Name)
			}
			if diff := cmp.Diff(tc.wantGates, names); diff != "" {
				t.Errorf("scheduling gates (-want +got):\n%s\npatch: %s", diff, resp.Patch)
			}
			// The API server may call the webhook again on the mutated pod
			// (reinvocationPolicy IfNeeded); that adds nothing.
			if tc.op == "" {
				if again := a.Mutate(testContext(t), createRequest(t, got)); len(again.Patch) > 0 {
					t.Errorf("second mutation patched again: %s", again.Patch)
				}
			}
		})
	}
}

// TestMutateJobIsNotFitGated pins that a Job's pod template is not gated:
// each pod the Job creates passes through the webhook and is gated then.
func TestMutateJobIsNotFitGated(t *testing.T) {
	cfg := DefaultConfig()
	cfg.FitGateSchedulers = []string{DefaultSchedulerName}
	a := newAdmitter(t, cfg)
	j := job(limited("train", "nvidia.com/gpumem", "4000"))
	j.Spec.Template.Spec.SchedulerName = DefaultSchedulerName
	req := jobRequest(t, j, nil)
	resp := a.Mutate(testContext(t), req)
	if !resp.Allowed {
		t.Fatalf("Mutate refused the Job: %s", resp.Result.Message)
	}
	got := &batchv1.Job{}
	decodePatched(t, req, resp, got)
	if gates := got.Spec.Template.Spec.SchedulingGates; len(gates) > 0 {
		t.Errorf("the Job's template got scheduling gates %v, want none", gates)
	}
}
