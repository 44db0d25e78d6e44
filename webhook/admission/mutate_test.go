package admission

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

func TestMutate(t *testing.T) {
	sidecar := corev1.ContainerRestartPolicyAlways
	custom := DefaultConfig()
	custom.SchedulerName = "gpu-sched"
	custom.ResourceNames = gpurequest.ResourceNames{
		Count: "example.com/vgpu", Memory: "example.com/vmem",
		MemoryPercentage: "example.com/vmem-pct", Cores: "example.com/vcores",
	}
	tests := []struct {
		name string
		cfg  *Config
		pod  *corev1.Pod
		// want edits a copy of pod into the expected result; nil means unchanged.
		want    func(p *corev1.Pod)
		objects []runtime.Object
	}{
		{
			name: "memory alone gets a count of 1 in limits and requests and Tessera's scheduler",
			pod:  pod(limited("main", "nvidia.com/gpumem", "4000")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpumem", "4000", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaMemory, "4000")
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "percentage alone gets a count of 1",
			pod:  pod(limited("main", "nvidia.com/gpumem-percentage", "50")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpumem-percentage", "50", "nvidia.com/gpu", "1", quotaGPUs, "1")
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "cores alone get a count of 1",
			pod:  pod(limited("main", "nvidia.com/gpucores", "30")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpucores", "30", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaCores, "30")
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "slice in limits only gets the count in limits only",
			pod: pod(corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{
				Limits: resources("nvidia.com/gpumem", "4000"), Requests: resources("cpu", "1"),
			}}),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits = resources("nvidia.com/gpumem", "4000", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaMemory, "4000")
				p.Spec.Containers[0].Resources.Requests = resources("cpu", "1", quotaGPUs, "1", quotaMemory, "4000")
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "slice in requests only gets limits created with the count",
			pod: pod(corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{
				Requests: resources("nvidia.com/gpumem", "4000"),
			}}),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0].Resources.Limits = resources("nvidia.com/gpu", "1", quotaGPUs, "1", quotaMemory, "4000")
				p.Spec.Containers[0].Resources.Requests = resources("nvidia.com/gpumem", "4000", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaMemory, "4000")
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "bare count means whole GPUs and keeps its count, counting 100 cores each",
			pod:  pod(limited("main", "nvidia.com/gpu", "2")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpu", "2", quotaGPUs, "2", quotaCores, "200")
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "count with a slice keeps its count, the memory summed over the GPUs",
			pod:  pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "4000")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "4000", quotaGPUs, "2", quotaMemory, "8000")
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "init and sidecar containers get a count too",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "cpu", "1"))
				p.Spec.InitContainers = []corev1.Container{
					limited("warmup", "nvidia.com/gpumem", "1000"),
					limited("proxy", "nvidia.com/gpucores", "10"),
				}
				p.Spec.InitContainers[1].RestartPolicy = &sidecar
				return p
			}(),
			want: func(p *corev1.Pod) {
				p.Spec.InitContainers[0] = limited("warmup", "nvidia.com/gpumem", "1000", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaMemory, "1000")
				p.Spec.InitContainers[1] = limited("proxy", "nvidia.com/gpucores", "10", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaCores, "10")
				p.Spec.InitContainers[1].RestartPolicy = &sidecar
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "empty scheduler name becomes Tessera's",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaCores, "100"))
				p.Spec.SchedulerName = ""
				return p
			}(),
			want: func(p *corev1.Pod) { p.Spec.SchedulerName = DefaultSchedulerName },
		},
		{
			name: "another scheduler is kept while the count is added",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpumem", "4000"))
				p.Spec.SchedulerName = "volcano"
				return p
			}(),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpumem", "4000", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaMemory, "4000")
			},
		},
		{
			name: "pod already normalised needs no patch",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000", quotaGPUs, "1", quotaMemory, "4000"))
				p.Spec.SchedulerName = DefaultSchedulerName
				return p
			}(),
		},
		{
			name: "pod without GPUs is untouched",
			pod:  pod(limited("main", "cpu", "2", "memory", "1Gi")),
		},
		{
			name: "count of zero alone asks for no GPU and is untouched",
			pod:  pod(limited("main", "nvidia.com/gpu", "0")),
		},
		{
			// HAMi reads gpucores: 0 as no cores at all.
			name: "zero cores alone ask for no GPU and are untouched",
			pod:  pod(limited("main", "nvidia.com/gpucores", "0")),
		},
		{
			name: "zero cores with a count read as the count alone",
			pod:  pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "0")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "0", quotaGPUs, "1", quotaCores, "100")
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "pod labelled opted out is untouched",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpumem", "4000"))
				p.Labels = map[string]string{DefaultOptOutLabel: DefaultOptOutValue}
				return p
			}(),
		},
		{
			name:    "pod in a namespace labelled opted out is untouched",
			pod:     pod(limited("main", "nvidia.com/gpumem", "4000")),
			objects: []runtime.Object{namespace(testNamespace, map[string]string{DefaultOptOutLabel: DefaultOptOutValue})},
		},
		{
			name:    "opt-out label with another value does not opt out",
			pod:     pod(limited("main", "nvidia.com/gpucores", "20")),
			objects: []runtime.Object{namespace(testNamespace, map[string]string{DefaultOptOutLabel: "enabled"})},
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpucores", "20", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaCores, "20")
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "configured resource and scheduler names are used",
			cfg:  &custom,
			pod:  pod(limited("main", "example.com/vmem", "4000", "nvidia.com/gpumem", "1")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "example.com/vmem", "4000", "nvidia.com/gpumem", "1", "example.com/vgpu", "1", quotaGPUs, "1", quotaMemory, "4000")
				p.Spec.SchedulerName = "gpu-sched"
			},
		},
		{
			name: "NVIDIA's MIG resource becomes a count of 1 and the profile annotation",
			pod:  pod(limited("main", "nvidia.com/mig-3g.20gb", "1", "cpu", "1")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "cpu", "1", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaCores, "100")
				p.Annotations = map[string]string{gpurequest.AnnotationMIGProfile: "3g.20gb"}
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "containers asking for the same MIG profile each get a count, and a matching annotation is kept",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/mig-1g.10gb", "1"), limited("side", "nvidia.com/mig-1g.10gb", "1"))
				p.Spec.InitContainers = []corev1.Container{limited("setup", "cpu", "1")}
				p.Annotations = map[string]string{gpurequest.AnnotationMIGProfile: "1g.10gb"}
				return p
			}(),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaCores, "100")
				p.Spec.Containers[1] = limited("side", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaCores, "100")
				p.Spec.SchedulerName = DefaultSchedulerName
			},
		},
		{
			name: "a MIG resource of 0 asks for nothing",
			pod:  pod(limited("main", "nvidia.com/mig-3g.20gb", "0")),
		},
		{
			name: "names other than the configured ones are not Tessera's",
			cfg:  &custom,
			pod:  pod(limited("main", "nvidia.com/gpumem", "4000")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig()
			if tc.cfg != nil {
				cfg = *tc.cfg
			}
			a := newAdmitter(t, cfg, tc.objects...)
			req := createRequest(t, tc.pod)
			resp := a.Mutate(testContext(t), req)
			if !resp.Allowed || resp.Result != nil {
				t.Fatalf("Mutate refused the pod: %+v", resp.Result)
			}
			want := tc.pod.DeepCopy()
			if tc.want != nil {
				tc.want(want)
			} else if len(resp.Patch) > 0 {
				t.Fatalf("want no patch, got %s", resp.Patch)
			}
			got := applyPatch(t, req, resp)
			if diff := cmp.Diff(asJSON(t, want), asJSON(t, got)); diff != "" {
				t.Errorf("patched pod differs (-want +got):\n%s\npatch: %s", diff, resp.Patch)
			}
			// Mutating the result again changes nothing: the API server
			// may call the webhook twice (reinvocationPolicy IfNeeded).
			again := a.Mutate(testContext(t), createRequest(t, got))
			if len(again.Patch) > 0 {
				t.Errorf("second mutation patched again: %s", again.Patch)
			}
		})
	}
}

// TestMutateRefusesMIGAsksTesseraCannotServe pins that a pod asking for
// NVIDIA's MIG resources in a way Tessera cannot serve is refused in both
// modes, naming the resource it wrote and why.
func TestMutateRefusesMIGAsksTesseraCannotServe(t *testing.T) {
	withAnnotation := func(p *corev1.Pod, k, v string) *corev1.Pod {
		p.Annotations = map[string]string{k: v}
		return p
	}
	tests := []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"two instances in one container", pod(limited("main", "nvidia.com/mig-3g.20gb", "2")),
			[]string{`spec.containers[0].resources.limits[nvidia.com/mig-3g.20gb]: Invalid value: "2": must be at most 1: each unit is one MIG instance`}},
		{"a name that is no profile", pod(limited("main", "nvidia.com/mig-huge", "1")),
			[]string{`spec.containers[0].resources.limits[nvidia.com/mig-huge]: Invalid value: "1": names no MIG profile`}},
		{"a MIG resource beside a memory slice", pod(limited("main", "nvidia.com/mig-3g.20gb", "1", "nvidia.com/gpumem", "1000")),
			[]string{`spec.containers[0].resources.limits[nvidia.com/mig-3g.20gb]: Forbidden: may not be set together with nvidia.com/gpu, nvidia.com/gpumem`}},
		{"two MIG resources in one container", pod(limited("main", "nvidia.com/mig-3g.20gb", "1", "nvidia.com/mig-1g.10gb", "1")),
			[]string{`spec.containers[0].resources.limits[nvidia.com/mig-3g.20gb]: Forbidden: may not be set together with nvidia.com/mig-1g.10gb`}},
		{"two profiles in one pod", pod(limited("a", "nvidia.com/mig-3g.20gb", "1"), limited("b", "nvidia.com/mig-1g.10gb", "1")),
			[]string{`spec.containers[1].resources.limits[nvidia.com/mig-1g.10gb]: Forbidden: asks for a MIG instance of another profile than nvidia.com/mig-3g.20gb`}},
		{"a whole GPU beside a MIG instance", pod(limited("a", "nvidia.com/mig-3g.20gb", "1"), limited("b", "nvidia.com/gpu", "1")),
			[]string{`spec.containers[1].resources.limits: Forbidden: asks for GPUs that are no MIG instance, beside a container that asks for nvidia.com/mig-3g.20gb`}},
		{"another profile annotated", withAnnotation(pod(limited("a", "nvidia.com/mig-3g.20gb", "1")), gpurequest.AnnotationMIGProfile, "1g.10gb"),
			[]string{`metadata.annotations[tessera.dev/mig-profile]: Invalid value: "1g.10gb": must be 3g.20gb, or unset, since the pod asks for nvidia.com/mig-3g.20gb`}},
		{"HAMi's shared mode", withAnnotation(pod(limited("a", "nvidia.com/mig-3g.20gb", "1")), "nvidia.com/vgpu-mode", "hami-core"),
			[]string{`metadata.annotations[tessera.dev/gpu-mode]: Invalid value: "hami-core": asks for whole GPUs shared by hami-core only, but the pod asks for nvidia.com/mig-3g.20gb`}},
	}
	for _, tc := range tests {
		for _, mode := range []string{ModeExtender, ModeDRA} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Mode = mode
				a := newAdmitter(t, cfg)
				for _, review := range []struct {
					verb string
					call func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse
				}{{"Mutate", a.Mutate}, {"Validate", a.Validate}} {
					resp := review.call(testContext(t), createRequest(t, tc.pod))
					if resp.Allowed || resp.Result == nil {
						t.Fatalf("%s admitted the pod, patch %s", review.verb, resp.Patch)
					}
					for _, w := range tc.want {
						if !strings.Contains(resp.Result.Message, w) {
							t.Errorf("%s: message %q does not say %q", review.verb, resp.Result.Message, w)
						}
					}
				}
			})
		}
	}
}

func TestMutateLeavesOtherOperationsAlone(t *testing.T) {
	for _, op := range []admissionv1.Operation{admissionv1.Update, admissionv1.Delete, admissionv1.Connect} {
		t.Run(string(op), func(t *testing.T) {
			a := newAdmitter(t, DefaultConfig())
			req := createRequest(t, pod(limited("main", "nvidia.com/gpumem", "4000")))
			req.Operation = op
			resp := a.Mutate(testContext(t), req)
			if !resp.Allowed || len(resp.Patch) > 0 {
				t.Errorf("want admitted unchanged, got allowed=%v patch=%s", resp.Allowed, resp.Patch)
			}
		})
	}
}

// asJSON is the object as the API server would store it, for comparison:
// quantities built and parsed compare equal once formatted.
func asJSON(t testing.TB, p any) any {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestPointerEscapes(t *testing.T) {
	tests := []struct {
		name   string
		tokens []string
		want   string
	}{
		{"plain tokens", []string{"spec", "schedulerName"}, "/spec/schedulerName"},
		{"slash in a resource name", []string{"limits", "nvidia.com/gpu"}, "/limits/nvidia.com~1gpu"},
		{"tilde before slash", []string{"a~/b"}, "/a~0~1b"},
		{"tilde and one", []string{"~1"}, "/~01"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pointer(tc.tokens...); got != tc.want {
				t.Errorf("pointer(%q) = %q, want %q", tc.tokens, got, tc.want)
			}
		})
	}
}

// TestMutateWarnsOfAMIGProfileNoGPUIs pins the warning a pod asking for a
// MIG profile by NVIDIA's name gets when no GPU of the cluster is such an
// instance now, naming the resource it wrote and the profiles there are.
func TestMutateWarnsOfAMIGProfileNoGPUIs(t *testing.T) {
	withMIG := gpuNode("mig", 100, 19968, 4864)
	withMIG.Status.Devices[0].MIG = &gpuv1alpha1.MIGInstance{ParentUUID: "GPU-p", Profile: "3g.20gb"}
	withMIG.Status.Devices[1].MIG = &gpuv1alpha1.MIGInstance{ParentUUID: "GPU-p", Profile: "1g.5gb"}
	tests := []struct {
		name    string
		profile string
		nodes   []runtime.Object
		want    []string
	}{
		{"a profile the cluster has", "3g.20gb", []runtime.Object{withMIG}, nil},
		{"a profile it has not", "2g.10gb", []runtime.Object{withMIG}, []string{
			"the pod asks for nvidia.com/mig-2g.10gb, but no GPU in the cluster is a 2g.10gb MIG instance now (the cluster's MIG instances are 1g.5gb, 3g.20gb): it stays Pending until one is"}},
		{"no GPU in MIG mode", "3g.20gb", []runtime.Object{gpuNode("whole", 100, 81920)}, []string{
			"the pod asks for nvidia.com/mig-3g.20gb, but no GPU in the cluster is a 3g.20gb MIG instance now (no GPU in the cluster is in MIG mode): it stays Pending until one is"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmitter(t, DefaultConfig(), tc.nodes...)
			resp := a.Mutate(testContext(t), createRequest(t, pod(limited("main", "nvidia.com/mig-"+tc.profile, "1"))))
			if !resp.Allowed {
				t.Fatalf("Mutate refused the pod: %s", resp.Result.Message)
			}
			if diff := cmp.Diff(tc.want, resp.Warnings); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMIGOnlyPodGetsOneInstancePerContainer pins the answer every mode
// gives a pod limited to MIG instances that asks for more than one GPU in
// a container, such as HAMi's dynamic MIG example: refused at creation,
// naming the count and the key that limits the pod to MIG instances as
// the pod wrote it.
func TestMIGOnlyPodGetsOneInstancePerContainer(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"HAMi's GPU mode", map[string]string{"nvidia.com/vgpu-mode": "mig"},
			`spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: 2: must be 1, since the pod asks for MIG instances only (nvidia.com/vgpu-mode)`},
		{"Tessera's GPU mode", map[string]string{gpurequest.AnnotationGPUMode: "mig"},
			`must be 1, since the pod asks for MIG instances only (tessera.dev/gpu-mode)`},
		{"a MIG profile", map[string]string{gpurequest.AnnotationMIGProfile: "1g.10gb"},
			`must be 1, since the pod asks for MIG instances only (tessera.dev/mig-profile)`},
	}
	for _, tc := range tests {
		for _, mode := range []string{ModeExtender, ModeDRA} {
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				cfg := DefaultConfig()
				cfg.Mode = mode
				a := newAdmitter(t, cfg)
				p := pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "8000"))
				p.Annotations = tc.annotations
				reviews := []func(context.Context, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse{a.Validate}
				if mode == ModeDRA {
					reviews = append(reviews, a.Mutate)
				}
				for _, review := range reviews {
					resp := review(testContext(t), createRequest(t, p))
					if resp.Allowed || resp.Result == nil || !strings.Contains(resp.Result.Message, tc.want) {
						t.Errorf("allowed %v, result %+v; want a refusal saying %q", resp.Allowed, resp.Result, tc.want)
					}
				}
				one := pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "8000"))
				one.Annotations = tc.annotations
				if resp := a.Validate(testContext(t), createRequest(t, mutated(t, a, one))); !resp.Allowed {
					t.Errorf("one GPU refused: %+v", resp.Result)
				}
			})
		}
	}
}
