package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	dracel "k8s.io/dynamic-resource-allocation/cel"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/webhook/draclaims"
)

// draAdmitter is an Admitter in DRA mode over the given objects, with the
// fake clientset its templates are written to.
func draAdmitter(t *testing.T, objs ...runtime.Object) (*Admitter, *fake.Clientset) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Mode = ModeDRA
	a := newAdmitter(t, cfg, objs...)
	kube := fake.NewClientset()
	a.templates = draclaims.NewClaimTemplates(kube, templateLister(t))
	return a, kube
}

// draNode is a GPUNode of a node in DRA mode with a GPU of each memory size.
func draNode(name string, memoryMiB ...int64) *gpuv1alpha1.GPUNode {
	n := gpuNode(name, 100, memoryMiB...)
	n.Status.KubeletAPI = gpuv1alpha1.KubeletAPIDRA
	return n
}

// published is a GPU as the node daemon publishes it in its ResourceSlice.
func published(uuid, model string, memoryMiB int64, shareLimit int32) dracel.Device {
	d := dra.Device(gpuv1alpha1.GPUDevice{UUID: uuid, Model: model, MemoryMiB: memoryMiB, Cores: 100, ShareLimit: shareLimit})
	return dracel.Device{Driver: gpuv1alpha1.DRADriverName, AllowMultipleAllocations: d.AllowMultipleAllocations, Attributes: d.Attributes, Capacity: d.Capacity}
}

// matches evaluates selectors as kube-scheduler does.
func matches(t *testing.T, selectors []resourceapi.DeviceSelector, d dracel.Device) bool {
	t.Helper()
	compiler := dracel.GetCompiler(dracel.Features{EnableConsumableCapacity: true})
	for _, s := range selectors {
		result := compiler.CompileCELExpression(s.CEL.Expression, dracel.Options{})
		if result.Error != nil {
			t.Fatalf("selector %q does not compile: %v", s.CEL.Expression, result.Error)
		}
		ok, _, err := result.DeviceMatches(context.Background(), d)
		if err != nil {
			t.Fatalf("selector %q: %v", s.CEL.Expression, err)
		}
		if !ok {
			return false
		}
	}
	return true
}

// mutateDRA runs the mutation and returns the patched pod and the
// templates in the pod's namespace.
func mutateDRA(t *testing.T, a *Admitter, kube *fake.Clientset, p *corev1.Pod) (*corev1.Pod, map[string]*resourceapi.ResourceClaimTemplate) {
	t.Helper()
	req := createRequest(t, p)
	resp := a.Mutate(testContext(t), req)
	if !resp.Allowed {
		t.Fatalf("refused: %v", resp.Result)
	}
	out := applyPatch(t, req, resp)
	list, err := kube.ResourceV1().ResourceClaimTemplates(p.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	templates := map[string]*resourceapi.ResourceClaimTemplate{}
	for i := range list.Items {
		templates[list.Items[i].Name] = &list.Items[i]
	}
	// Mutating the result again changes nothing, as on reinvocation.
	if again := a.Mutate(testContext(t), createRequest(t, out)); !again.Allowed || len(again.Patch) > 0 {
		t.Errorf("mutating the converted pod again: allowed %v, patch %s", again.Allowed, again.Patch)
	}
	return out, templates
}

// claimOf returns the template of the container's one claim.
func claimOf(t *testing.T, p *corev1.Pod, c *corev1.Container, templates map[string]*resourceapi.ResourceClaimTemplate) *resourceapi.ResourceClaimTemplate {
	t.Helper()
	if len(c.Resources.Claims) != 1 {
		t.Fatalf("container %s uses claims %v, want one", c.Name, c.Resources.Claims)
	}
	for _, pc := range p.Spec.ResourceClaims {
		if pc.Name == c.Resources.Claims[0].Name {
			if pc.ResourceClaimTemplateName == nil || templates[*pc.ResourceClaimTemplateName] == nil {
				t.Fatalf("claim %s names template %v, which does not exist (have %d)", pc.Name, pc.ResourceClaimTemplateName, len(templates))
			}
			return templates[*pc.ResourceClaimTemplateName]
		}
	}
	t.Fatalf("container %s uses claim %s, which the pod does not list: %v", c.Name, c.Resources.Claims[0].Name, p.Spec.ResourceClaims)
	return nil
}

func TestMutateForDRATurnsAHAMiPodIntoAClaimOfDistinctGPUsOfTheType(t *testing.T) {
	a, kube := draAdmitter(t)
	p := pod(limited("cuda", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "20000", "nvidia.com/gpucores", "30", "cpu", "1"))
	p.Annotations = map[string]string{"nvidia.com/use-gputype": "A100", "nvidia.com/nouse-gpuuuid": "GPU-bad"}
	out, templates := mutateDRA(t, a, kube, p)

	c := &out.Spec.Containers[0]
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		for name := range list {
			if strings.HasPrefix(string(name), "nvidia.com/") {
				t.Errorf("the container still asks for %s", name)
			}
		}
		if _, ok := list["cpu"]; !ok {
			t.Error("the container lost its cpu")
		}
	}
	if out.Spec.SchedulerName != corev1.DefaultSchedulerName {
		t.Errorf("schedulerName %q: DRA pods stay with kube-scheduler", out.Spec.SchedulerName)
	}
	tmpl := claimOf(t, out, c, templates)
	if tmpl.Namespace != testNamespace || !strings.HasPrefix(tmpl.Name, draclaims.TemplatePrefix) {
		t.Errorf("template %s/%s", tmpl.Namespace, tmpl.Name)
	}
	devices := tmpl.Spec.Spec.Devices
	if len(devices.Requests) != 1 || devices.Requests[0].Exactly == nil {
		t.Fatalf("requests %+v, want one exact request", devices.Requests)
	}
	r := devices.Requests[0].Exactly
	if r.DeviceClassName != DefaultDeviceClass || r.Count != 2 {
		t.Errorf("request for %d of class %s, want 2 of %s", r.Count, r.DeviceClassName, DefaultDeviceClass)
	}
	memory, cores := r.Capacity.Requests[gpuv1alpha1.DRACapacityMemory], r.Capacity.Requests[gpuv1alpha1.DRACapacityCores]
	if memory.Cmp(resource.MustParse("20000Mi")) != 0 || cores.Cmp(resource.MustParse("30")) != 0 {
		t.Errorf("capacity %v, want memory 20000Mi and cores 30", r.Capacity.Requests)
	}
	if len(devices.Constraints) != 1 || ptr.Deref(devices.Constraints[0].DistinctAttribute, "") != "gpu.tessera.dev/uuid" {
		t.Errorf("constraints %+v, want distinct GPUs", devices.Constraints)
	}
	for _, tc := range []struct {
		device dracel.Device
		want   bool
	}{
		{published("GPU-a", "NVIDIA A100-SXM4-80GB", 81920, 10), true},
		{published("GPU-t", "Tesla T4", 15360, 10), false},
		{published("GPU-BAD", "NVIDIA A100-SXM4-80GB", 81920, 10), false},
	} {
		if got := matches(t, r.Selectors, tc.device); got != tc.want {
			t.Errorf("selectors %v match %v: %v, want %v", r.Selectors, tc.device.Attributes, got, tc.want)
		}
	}
}

func TestMutateForDRAClaims(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	sidecar := limited("side", "nvidia.com/gpumem", "1000")
	sidecar.RestartPolicy = &always
	tests := []struct {
		name      string
		pod       *corev1.Pod
		objs      []runtime.Object
		templates int
		check     func(t *testing.T, out *corev1.Pod, templates map[string]*resourceapi.ResourceClaimTemplate)
	}{{
		name:      "a slice without a count is a slice of one GPU, with no constraint",
		pod:       pod(limited("cuda", "nvidia.com/gpumem", "4000")),
		templates: 1,
		check: func(t *testing.T, out *corev1.Pod, templates map[string]*resourceapi.ResourceClaimTemplate) {
			d := claimOf(t, out, &out.Spec.Containers[0], templates).Spec.Spec.Devices
			if d.Requests[0].Exactly.Count != 1 || len(d.Constraints) != 0 || d.Requests[0].Exactly.Capacity.Requests[gpuv1alpha1.DRACapacityCores] != (resource.Quantity{}) {
				t.Errorf("devices %+v", d)
			}
		},
	}, {
		name:      "a bare count takes whole GPUs through the capacities' defaults",
		pod:       pod(limited("cuda", "nvidia.com/gpu", "1")),
		templates: 1,
		check: func(t *testing.T, out *corev1.Pod, templates map[string]*resourceapi.ResourceClaimTemplate) {
			if c := claimOf(t, out, &out.Spec.Containers[0], templates).Spec.Spec.Devices.Requests[0].Exactly.Capacity; c != nil {
				t.Errorf("capacity %+v, want none (the defaults: all memory)", c)
			}
		},
	}, {
		name:      "zero cores with a count take whole GPUs as a bare count does",
		pod:       pod(limited("cuda", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "0")),
		templates: 1,
		check: func(t *testing.T, out *corev1.Pod, templates map[string]*resourceapi.ResourceClaimTemplate) {
			if c := claimOf(t, out, &out.Spec.Containers[0], templates).Spec.Spec.Devices.Requests[0].Exactly.Capacity; c != nil {
				t.Errorf("capacity %+v, want none (the defaults: all memory)", c)
			}
			if l := out.Spec.Containers[0].Resources.Limits; len(l) != 0 {
				t.Errorf("limits %v, want the GPU resources removed", l)
			}
		},
	}, {
		name:      "containers with the same request share a template, each with its own claim; init containers and sidecars too",
		pod:       &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: testNamespace}, Spec: corev1.PodSpec{InitContainers: []corev1.Container{sidecar}, Containers: []corev1.Container{limited("a", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), limited("b", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), limited("plain", "cpu", "1")}}},
		templates: 1,
		check: func(t *testing.T, out *corev1.Pod, templates map[string]*resourceapi.ResourceClaimTemplate) {
			if len(out.Spec.ResourceClaims) != 3 {
				t.Fatalf("pod claims %+v, want one per GPU container", out.Spec.ResourceClaims)
			}
			names := map[string]bool{}
			for _, c := range []*corev1.Container{&out.Spec.InitContainers[0], &out.Spec.Containers[0], &out.Spec.Containers[1]} {
				claimOf(t, out, c, templates)
				names[c.Resources.Claims[0].Name] = true
			}
			if len(names) != 3 || len(out.Spec.Containers[2].Resources.Claims) != 0 {
				t.Errorf("containers share claims: %v", names)
			}
		},
	}, {
		name: "a memory percentage becomes one subrequest per size of GPU",
		pod:  pod(limited("cuda", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "25")),
		objs: []runtime.Object{draNode("big", 81920, 81920), draNode("small", 15360), gpuNode("device-plugin", 100, 40960)},
		check: func(t *testing.T, out *corev1.Pod, templates map[string]*resourceapi.ResourceClaimTemplate) {
			subs := claimOf(t, out, &out.Spec.Containers[0], templates).Spec.Spec.Devices.Requests[0].FirstAvailable
			if len(subs) != 2 {
				t.Fatalf("subrequests %+v, want one per GPU size", subs)
			}
			for i, want := range []struct {
				memory string
				gpu    dracel.Device
			}{{"3840Mi", published("GPU-s", "Tesla T4", 15360, 10)}, {"20480Mi", published("GPU-b", "NVIDIA A100", 81920, 10)}} {
				got := subs[i].Capacity.Requests[gpuv1alpha1.DRACapacityMemory]
				if got.Cmp(resource.MustParse(want.memory)) != 0 || !matches(t, subs[i].Selectors, want.gpu) || matches(t, subs[1-i].Selectors, want.gpu) {
					t.Errorf("subrequest %d asks for %s with selectors %v, want %s of its size only", i, &got, subs[i].Selectors, want.memory)
				}
			}
		},
		templates: 1,
	}, {
		name: "exclusive use (100 cores) takes every share of the GPU",
		pod:  pod(limited("cuda", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", "nvidia.com/gpucores", "100")),
		objs: []runtime.Object{draNode("n", 81920)},
		check: func(t *testing.T, out *corev1.Pod, templates map[string]*resourceapi.ResourceClaimTemplate) {
			subs := claimOf(t, out, &out.Spec.Containers[0], templates).Spec.Spec.Devices.Requests[0].FirstAvailable
			if len(subs) != 1 {
				t.Fatalf("subrequests %+v", subs)
			}
			shares, memory := subs[0].Capacity.Requests[gpuv1alpha1.DRACapacityShares], subs[0].Capacity.Requests[gpuv1alpha1.DRACapacityMemory]
			if shares.Value() != 10 || memory.Value() != 1000<<20 || !matches(t, subs[0].Selectors, published("GPU-a", "A100", 4096, 10)) || matches(t, subs[0].Selectors, published("GPU-a", "A100", 4096, 4)) {
				t.Errorf("subrequest %+v, want all 10 shares of GPUs that have 10", subs[0])
			}
		},
		templates: 1,
	}, {
		name: "a NUMA-bound pod's GPUs share the NUMA node, and a container asking for two GPUs gets no MIG instance",
		pod: func() *corev1.Pod {
			p := pod(limited("cuda", "nvidia.com/gpu", "2"))
			p.Annotations = map[string]string{"nvidia.com/numa-bind": "true"}
			return p
		}(),
		templates: 1,
		check: func(t *testing.T, out *corev1.Pod, templates map[string]*resourceapi.ResourceClaimTemplate) {
			d := claimOf(t, out, &out.Spec.Containers[0], templates).Spec.Spec.Devices
			if len(d.Constraints) != 2 || ptr.Deref(d.Constraints[1].MatchAttribute, "") != "gpu.tessera.dev/numaNode" {
				t.Errorf("constraints %+v", d.Constraints)
			}
			mig := dra.Device(gpuv1alpha1.GPUDevice{UUID: "MIG-1", Model: "A100", MemoryMiB: 9728, Cores: 14, ShareLimit: 1,
				MIG: &gpuv1alpha1.MIGInstance{ParentUUID: "GPU-a", Profile: "1g.10gb"}})
			if matches(t, d.Requests[0].Exactly.Selectors, dracel.Device{Driver: gpuv1alpha1.DRADriverName, Attributes: mig.Attributes, Capacity: mig.Capacity}) ||
				!matches(t, d.Requests[0].Exactly.Selectors, published("GPU-a", "A100", 81920, 10)) {
				t.Errorf("selectors %v pick MIG instances for two GPUs, or not the whole GPU", d.Requests[0].Exactly.Selectors)
			}
		},
	}, {
		name:      "NVIDIA's MIG resource becomes a claim of one instance of its profile",
		pod:       pod(limited("cuda", "nvidia.com/mig-3g.20gb", "1")),
		templates: 1,
		check: func(t *testing.T, out *corev1.Pod, templates map[string]*resourceapi.ResourceClaimTemplate) {
			if _, ok := out.Spec.Containers[0].Resources.Limits["nvidia.com/mig-3g.20gb"]; ok {
				t.Errorf("the container still asks for nvidia.com/mig-3g.20gb: %v", out.Spec.Containers[0].Resources)
			}
			d := claimOf(t, out, &out.Spec.Containers[0], templates).Spec.Spec.Devices
			instance := func(profile string) dracel.Device {
				m := dra.Device(gpuv1alpha1.GPUDevice{UUID: "MIG-" + profile, Model: "A100", MemoryMiB: 19968, Cores: 42, ShareLimit: 1,
					MIG: &gpuv1alpha1.MIGInstance{ParentUUID: "GPU-a", Profile: profile}})
				return dracel.Device{Driver: gpuv1alpha1.DRADriverName, Attributes: m.Attributes, Capacity: m.Capacity}
			}
			if len(d.Requests) != 1 || d.Requests[0].Exactly == nil || d.Requests[0].Exactly.Count != 1 ||
				!matches(t, d.Requests[0].Exactly.Selectors, instance("3g.20gb")) ||
				matches(t, d.Requests[0].Exactly.Selectors, instance("1g.10gb")) ||
				matches(t, d.Requests[0].Exactly.Selectors, published("GPU-a", "A100", 81920, 10)) {
				t.Errorf("requests %+v do not pick one 3g.20gb instance only", d.Requests)
			}
		},
	}, {
		name:      "a namespace labelled for DRA mode converts in a webhook in extender mode",
		pod:       pod(limited("cuda", "nvidia.com/gpu", "1")),
		objs:      []runtime.Object{namespace(testNamespace, map[string]string{DefaultModeLabel: ModeDRA})},
		templates: 1,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, kube := draAdmitter(t, tc.objs...)
			if tc.name == "a namespace labelled for DRA mode converts in a webhook in extender mode" {
				a.cfg.Mode = ModeExtender
			}
			out, templates := mutateDRA(t, a, kube, tc.pod)
			if len(templates) != tc.templates {
				t.Errorf("%d templates, want %d", len(templates), tc.templates)
			}
			for _, c := range append(out.Spec.InitContainers, out.Spec.Containers...) {
				if u := a.useOf(&c); u.count || u.slice {
					t.Errorf("container %s still asks for GPU resources: %v", c.Name, c.Resources)
				}
			}
			if tc.check != nil {
				tc.check(t, out, templates)
			}
		})
	}
}

func TestMutateForDRARefuses(t *testing.T) {
	long := strings.Repeat("GPU-00000000-0000-0000-0000-000000000000,", 300)
	tests := []struct {
		name        string
		pod         *corev1.Pod
		objs        []runtime.Object
		annotations map[string]string
		want        []string
	}{{
		name: "more GPUs than a claim holds",
		pod:  pod(limited("cuda", "nvidia.com/gpu", "40")),
		want: []string{`container "cuda"`, "spec.containers[0].resources.limits[nvidia.com/gpu]", "must be at most 32 in DRA mode"},
	}, {
		name: "a percentage before any node reports its GPUs",
		pod:  pod(limited("cuda", "nvidia.com/gpumem-percentage", "50")),
		objs: []runtime.Object{gpuNode("device-plugin", 100, 40960)},
		want: []string{"a memory percentage depends on the GPU, and no DRA node reports its GPUs yet"},
	}, {
		name: "a percentage over more kinds of GPU than a prioritized list holds",
		pod:  pod(limited("cuda", "nvidia.com/gpumem-percentage", "50")),
		objs: []runtime.Object{draNode("n", 1000, 2000, 3000, 4000, 5000, 6000, 7000, 8000, 9000)},
		want: []string{"at most 8, and the cluster has 9 kinds"},
	}, {
		name:        "a UUID list too long for a CEL selector",
		pod:         pod(limited("cuda", "nvidia.com/gpu", "1")),
		annotations: map[string]string{"tessera.dev/gpu-uuid": long[:len(long)-1]},
		want:        []string{"metadata.annotations[tessera.dev/gpu-uuid]", "CEL selector of at most 10240 characters"},
	}, {
		name:        "a HAMi UUID list too long for a CEL selector, named by its key",
		pod:         pod(limited("cuda", "nvidia.com/gpu", "1")),
		annotations: map[string]string{"nvidia.com/use-gpuuuid": long[:len(long)-1]},
		want:        []string{"metadata.annotations[nvidia.com/use-gpuuuid]", "CEL selector of at most 10240 characters"},
	}, {
		name: "the rules of extender mode still hold",
		pod:  pod(limited("cuda", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "150")),
		want: []string{"must be at most 100"},
	}, {
		name: "a namespace with an unknown mode",
		pod:  pod(limited("cuda", "nvidia.com/gpu", "1")),
		objs: []runtime.Object{namespace(testNamespace, map[string]string{DefaultModeLabel: "DRA"})},
		want: []string{"tessera.dev/mode=DRA", "Unsupported value"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, kube := draAdmitter(t, tc.objs...)
			tc.pod.Annotations = tc.annotations
			resp := a.Mutate(testContext(t), createRequest(t, tc.pod))
			if resp.Allowed || resp.Result == nil {
				t.Fatalf("admitted: %+v", resp)
			}
			for _, want := range tc.want {
				if !strings.Contains(resp.Result.Message, want) {
					t.Errorf("message %q lacks %q", resp.Result.Message, want)
				}
			}
			if list, _ := kube.ResourceV1().ResourceClaimTemplates(testNamespace).List(context.Background(), metav1.ListOptions{}); len(list.Items) > 0 {
				t.Errorf("a refused pod left templates: %v", list.Items)
			}
		})
	}
}

func TestMutateForDRATemplates(t *testing.T) {
	t.Run("a dry run creates no template", func(t *testing.T) {
		a, kube := draAdmitter(t)
		req := createRequest(t, pod(limited("cuda", "nvidia.com/gpu", "1")))
		req.DryRun = ptr.To(true)
		if resp := a.Mutate(testContext(t), req); !resp.Allowed || len(resp.Patch) == 0 {
			t.Fatalf("dry run: %+v", resp)
		}
		if list, _ := kube.ResourceV1().ResourceClaimTemplates(testNamespace).List(context.Background(), metav1.ListOptions{}); len(list.Items) > 0 {
			t.Errorf("a dry run created %v", list.Items)
		}
	})
	t.Run("a template of the name with another spec refuses the pod", func(t *testing.T) {
		a, kube := draAdmitter(t)
		p := pod(limited("cuda", "nvidia.com/gpu", "1"))
		out, templates := mutateDRA(t, a, kube, p)
		tmpl := claimOf(t, out, &out.Spec.Containers[0], templates)
		tmpl.Spec.Spec.Devices.Requests[0].Exactly.Count = 8
		if _, err := kube.ResourceV1().ResourceClaimTemplates(testNamespace).Update(context.Background(), tmpl, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		resp := a.Mutate(testContext(t), createRequest(t, p))
		if resp.Allowed || !strings.Contains(resp.Result.Message, "exists with another spec") {
			t.Errorf("response %+v, want a refusal naming the template", resp.Result)
		}
	})
	t.Run("a policy annotation is warned about under the key the pod wrote", func(t *testing.T) {
		a, _ := draAdmitter(t)
		p := pod(limited("cuda", "nvidia.com/gpu", "1"))
		p.Annotations = map[string]string{"hami.io/gpu-scheduler-policy": "spread"}
		resp := a.Mutate(testContext(t), createRequest(t, p))
		if !resp.Allowed || len(resp.Warnings) == 0 || !strings.Contains(resp.Warnings[0], "hami.io/gpu-scheduler-policy=spread has no effect in DRA mode") {
			t.Errorf("warnings %v", resp.Warnings)
		}
	})
}

func TestMutateForDRASchedulerName(t *testing.T) {
	tests := []struct {
		name           string
		draScheduler   string
		podNames, want string
	}{
		{name: "without a DRA scheduler the pod stays with the default one", podNames: corev1.DefaultSchedulerName, want: corev1.DefaultSchedulerName},
		{name: "the default scheduler is replaced by the DRA scheduler", draScheduler: "tessera-scheduler-dra", podNames: corev1.DefaultSchedulerName, want: "tessera-scheduler-dra"},
		{name: "no scheduler named gets the DRA scheduler", draScheduler: "tessera-scheduler-dra", want: "tessera-scheduler-dra"},
		{name: "a scheduler the pod names is kept", draScheduler: "tessera-scheduler-dra", podNames: "custom", want: "custom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, kube := draAdmitter(t)
			a.cfg.DRASchedulerName = tc.draScheduler
			p := pod(limited("cuda", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"))
			p.Spec.SchedulerName = tc.podNames
			out, _ := mutateDRA(t, a, kube, p)
			if out.Spec.SchedulerName != tc.want {
				t.Errorf("schedulerName %q, want %q", out.Spec.SchedulerName, tc.want)
			}
		})
	}
}
