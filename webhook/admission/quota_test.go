package admission

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

// quotaMutation is a case of TestMutateWritesQuotaTotals.
type quotaMutation struct {
	name string
	pod  *corev1.Pod
	// want edits a copy of pod's containers into the expected result; nil
	// means unchanged.
	want    func(p *corev1.Pod)
	objects []runtime.Object
}

func quotaMutations() []quotaMutation {
	return []quotaMutation{
		{
			name: "totals the pod wrote are overwritten, so that it cannot under-declare",
			pod:  pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000", quotaGPUs, "1", quotaMemory, "10000", quotaCores, "1")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000", quotaGPUs, "2", quotaMemory, "20000")
			},
		},
		{
			name: "a percentage writes no memory, and loses the memory the pod wrote",
			pod:  pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50", quotaMemory, "5000")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50", quotaGPUs, "1")
			},
		},
		{
			name: "exclusive use counts 100 cores per GPU",
			pod:  pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "4000", "nvidia.com/gpucores", "100")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "4000", "nvidia.com/gpucores", "100",
					quotaGPUs, "2", quotaCores, "200", quotaMemory, "8000")
			},
		},
		{
			name: "a container of a GPU pod that asks for no GPU loses the totals it wrote",
			pod:  pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), limited("log", "cpu", "1", quotaMemory, "1")),
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000", quotaGPUs, "1", quotaMemory, "1000")
				p.Spec.Containers[1] = limited("log", "cpu", "1")
			},
		},
		{
			name: "init containers carry their own totals, for Kubernetes' rule to weigh",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "8000"))
				p.Spec.InitContainers = []corev1.Container{limited("warmup", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000")}
				return p
			}(),
			want: func(p *corev1.Pod) {
				p.Spec.InitContainers[0] = limited("warmup", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000", quotaGPUs, "2", quotaMemory, "20000")
				p.Spec.Containers[0] = limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "8000", quotaGPUs, "1", quotaMemory, "8000")
			},
		},
		{
			name: "a pod that asks for no GPU keeps what it wrote",
			pod:  pod(limited("main", "cpu", "1", quotaMemory, "5")),
		},
		{
			name:    "in DRA mode the claims are counted, and the pod gets no totals",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000")),
			objects: []runtime.Object{namespace(testNamespace, map[string]string{DefaultModeLabel: ModeDRA})},
			want: func(p *corev1.Pod) {
				p.Spec.Containers[0] = limited("main")
				p.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "tessera-gpu-0"}}
			},
		},
	}
}

func TestMutateWritesQuotaTotals(t *testing.T) {
	for _, tc := range quotaMutations() {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmitter(t, DefaultConfig(), tc.objects...)
			got := mutated(t, a, tc.pod)
			want := tc.pod.DeepCopy()
			if tc.want != nil {
				tc.want(want)
				if want.Spec.SchedulerName == corev1.DefaultSchedulerName && len(want.Spec.ResourceClaims) == 0 && a.podAsks(&want.Spec) {
					want.Spec.SchedulerName = DefaultSchedulerName
				}
			}
			// Only the containers are compared: the rest is TestMutate's and
			// TestMutateForDRA's.
			if diff := cmp.Diff(asJSON(t, &corev1.Pod{Spec: corev1.PodSpec{InitContainers: want.Spec.InitContainers, Containers: want.Spec.Containers}}),
				asJSON(t, &corev1.Pod{Spec: corev1.PodSpec{InitContainers: got.Spec.InitContainers, Containers: got.Spec.Containers}})); diff != "" {
				t.Errorf("containers differ (-want +got):\n%s", diff)
			}
			if again := a.Mutate(testContext(t), createRequest(t, got)); len(again.Patch) > 0 {
				t.Errorf("second mutation patched again: %s", again.Patch)
			}
			if resp := a.Validate(testContext(t), createRequest(t, got)); !resp.Allowed {
				t.Errorf("Validate refused the mutated pod: %s", resp.Result.Message)
			}
		})
	}
}

func TestValidateRefusesWrongQuotaTotals(t *testing.T) {
	tests := []struct {
		name    string
		pod     *corev1.Pod
		objects []runtime.Object
		// want are parts of the message; none means admitted.
		want []string
	}{
		{
			name: "a pod that skipped the mutation is told the totals it must carry",
			pod:  pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000")),
			want: []string{
				`container "main": spec.containers[0].resources.limits[gpu.tessera.dev/gpus]: Required value: must be 2 in limits and requests`,
				`spec.containers[0].resources.limits[gpu.tessera.dev/memory]: Required value: must be 20000 in limits and requests: the container's GPU memory in MiB (nvidia.com/gpumem x nvidia.com/gpu)`,
			},
		},
		{
			name: "memory counted per GPU rather than summed is refused",
			pod:  pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000", quotaGPUs, "2", quotaMemory, "10000")),
			want: []string{`spec.containers[0].resources.limits[gpu.tessera.dev/memory]: Invalid value: "10000": must be 20000 in limits and requests`},
		},
		{
			name: "memory for a percentage is refused",
			pod:  pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50", quotaGPUs, "1", quotaMemory, "100")),
			want: []string{`spec.containers[0].resources.limits[gpu.tessera.dev/memory]: Invalid value: "100": must not be set`, "nvidia.com/gpumem-percentage", "the scheduler counts it"},
		},
		{
			name: "totals on a container that asks for no GPU are refused",
			pod:  pod(limited("main", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaCores, "100"), limited("log", quotaGPUs, "1")),
			want: []string{`container "log": spec.containers[1].resources.limits[gpu.tessera.dev/gpus]: Invalid value: "1": must not be set: the container asks for no GPU`},
		},
		{
			name: "an init container's totals are checked too",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1", quotaGPUs, "1", quotaCores, "100"))
				p.Spec.InitContainers = []corev1.Container{limited("warmup", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "100", quotaGPUs, "1", quotaCores, "10")}
				return p
			}(),
			want: []string{`spec.initContainers[0].resources.limits[gpu.tessera.dev/cores]: Invalid value: "10": must be 100`},
		},
		{
			name:    "in DRA mode a pod carries no totals",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000")),
			objects: []runtime.Object{namespace(testNamespace, map[string]string{DefaultModeLabel: ModeDRA})},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmitter(t, DefaultConfig(), tc.objects...)
			resp := a.Validate(testContext(t), createRequest(t, tc.pod))
			checkRefusal(t, resp.Allowed, resp.Result, tc.want)
		})
	}
}

// checkRefusal checks that a review was admitted when want is empty, and
// else refused with a message that says every part of want.
func checkRefusal(t *testing.T, allowed bool, result *metav1.Status, want []string) {
	t.Helper()
	if len(want) == 0 {
		if !allowed {
			t.Fatalf("refused: %s", result.Message)
		}
		return
	}
	if allowed {
		t.Fatalf("admitted, want refused saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(result.Message, w) {
			t.Errorf("message %q does not say %q", result.Message, w)
		}
	}
}

// gpuQuota is a ResourceQuota of the test namespace on the GPU quota
// resources, with pairs of resource (without requests.), hard and used.
func gpuQuota(name string, triples ...string) *corev1.ResourceQuota {
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNamespace}}
	var hard, used []string
	for i := 0; i+2 < len(triples); i += 3 {
		hard = append(hard, "requests."+triples[i], triples[i+1])
		used = append(used, "requests."+triples[i], triples[i+2])
	}
	q.Spec.Hard, q.Status.Hard, q.Status.Used = resources(hard...), resources(hard...), resources(used...)
	return q
}

// quotaCase is a case of TestValidateRefusesPodsOverQuota: a pod, as the
// mutation leaves it, the objects in the listers, and the parts of the
// refusal's message (none: admitted).
type quotaCase struct {
	name    string
	pod     *corev1.Pod
	objects []runtime.Object
	want    []string
}

func TestValidateRefusesPodsOverQuota(t *testing.T) {
	for _, tc := range append(append(quotaRoomCases(), quotaScopeCases()...), quotaUnstatedCases()...) {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmitter(t, DefaultConfig(), tc.objects...)
			resp := a.Validate(testContext(t), createRequest(t, mutated(t, a, tc.pod)))
			checkRefusal(t, resp.Allowed, resp.Result, tc.want)
		})
	}
}

// twoBy10000 asks for 2 GPUs of 10000 MiB each: 20000 MiB in all.
func twoBy10000() *corev1.Pod {
	return pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000"))
}

func quotaScopeCases() []quotaCase {
	withClass := func(p *corev1.Pod, class string) *corev1.Pod {
		p = p.DeepCopy()
		p.Spec.PriorityClassName = class
		return p
	}
	scoped := gpuQuota("high", quotaMemory, "40000", "30000")
	scoped.Spec.ScopeSelector = &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{{
		ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: corev1.ScopeSelectorOpIn, Values: []string{"high"},
	}}}
	terminating := gpuQuota("batch", quotaMemory, "40000", "30000")
	terminating.Spec.Scopes = []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating}
	elsewhere := gpuQuota("gpu", quotaMemory, "1", "1")
	elsewhere.Namespace = "team-b"
	return []quotaCase{
		{
			name:    "a quota whose priority class scope the pod is outside does not count it",
			pod:     twoBy10000(),
			objects: []runtime.Object{scoped},
		},
		{
			name:    "a quota whose priority class scope the pod is in counts it",
			pod:     withClass(twoBy10000(), "high"),
			objects: []runtime.Object{scoped},
			want:    []string{"(ResourceQuota high)"},
		},
		{
			name:    "a quota of terminating pods does not count a pod without a deadline",
			pod:     twoBy10000(),
			objects: []runtime.Object{terminating},
		},
		{
			name:    "another namespace's quota does not count",
			pod:     twoBy10000(),
			objects: []runtime.Object{elsewhere},
		},
	}
}

func quotaRoomCases() []quotaCase {
	return []quotaCase{
		{
			name:    "memory summed over the GPUs past the limit names the namespace, what is used, what was asked and the limit",
			pod:     twoBy10000(),
			objects: []runtime.Object{gpuQuota("gpu", quotaMemory, "40000", "30000")},
			want: []string{"namespace team-a would exceed its GPU quota (ResourceQuota gpu) on requests.gpu.tessera.dev/memory (GPU memory in MiB): used 30000, asked 20000, limit 40000",
				"metadata.namespace: Forbidden"},
		},
		{
			name:    "a pod that fills the quota exactly is admitted",
			pod:     twoBy10000(),
			objects: []runtime.Object{gpuQuota("gpu", quotaMemory, "40000", "20000", quotaGPUs, "4", "2")},
		},
		{
			name:    "every resource and quota over its limit is named",
			pod:     twoBy10000(),
			objects: []runtime.Object{gpuQuota("gpu", quotaMemory, "40000", "30000"), gpuQuota("count", quotaGPUs, "4", "3")},
			want:    []string{"on requests.gpu.tessera.dev/memory", "(ResourceQuota count) on requests.gpu.tessera.dev/gpus (GPUs): used 3, asked 2, limit 4"},
		},
		{
			name:    "whole GPUs count 100 cores each",
			pod:     pod(limited("main", "nvidia.com/gpu", "2")),
			objects: []runtime.Object{gpuQuota("gpu", quotaCores, "400", "300")},
			want:    []string{"requests.gpu.tessera.dev/cores (GPU compute in percent of one GPU): used 300, asked 200, limit 400"},
		},
		{
			name:    "a percentage asks no memory at admission: the scheduler counts it",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50")),
			objects: []runtime.Object{gpuQuota("gpu", quotaMemory, "40000", "40000")},
		},
		{
			name:    "a limit between whole numbers admits the whole number below it",
			pod:     twoBy10000(),
			objects: []runtime.Object{gpuQuota("gpu", quotaGPUs, "2.5", "1")},
			want:    []string{"requests.gpu.tessera.dev/gpus (GPUs): used 1, asked 2, limit 2"},
		},
		{
			name:    "a limit beyond an int64 limits nothing that can be asked",
			pod:     twoBy10000(),
			objects: []runtime.Object{gpuQuota("gpu", quotaMemory, "1e30", "30000", quotaGPUs, "92233720368547758070", "3")},
		},
		{
			name: "init containers count by Kubernetes' rule: the larger of an init phase and the long-running containers",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "8000"))
				p.Spec.InitContainers = []corev1.Container{
					limited("proxy", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "5000"),
					limited("warmup", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "10000"),
				}
				p.Spec.InitContainers[0].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
				return p
			}(),
			objects: []runtime.Object{gpuQuota("gpu", quotaMemory, "40000", "20000")},
			// The warmup phase, 20000 beside the sidecar's 5000, outweighs
			// the sidecar and main's 13000.
			want: []string{"used 20000, asked 25000, limit 40000"},
		},
	}
}

func quotaUnstatedCases() []quotaCase {
	cores := gpuQuota("gpu", quotaCores, "400", "0")
	return []quotaCase{
		{
			name:    "a slice without compute under a quota on compute names the container, the resource to state and the quota",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000")),
			objects: []runtime.Object{cores},
			want: []string{`container "main": spec.containers[0].resources.limits[nvidia.com/gpucores]: Required value: ` +
				"namespace team-a limits GPU compute (ResourceQuota gpu on requests.gpu.tessera.dev/cores): must specify nvidia.com/gpucores for: main"},
		},
		{
			name: "an init container's slice is held to it too",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000", "nvidia.com/gpucores", "20"))
				p.Spec.InitContainers = []corev1.Container{limited("warmup", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "50")}
				return p
			}(),
			objects: []runtime.Object{cores},
			want:    []string{"spec.initContainers[0].resources.limits[nvidia.com/gpucores]", "must specify nvidia.com/gpucores for: warmup"},
		},
		{
			name:    "a slice that states its compute is admitted",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000", "nvidia.com/gpucores", "20")),
			objects: []runtime.Object{cores},
		},
		{
			name:    "a whole GPU states its compute by taking all of it",
			pod:     pod(limited("main", "nvidia.com/gpu", "1")),
			objects: []runtime.Object{cores},
		},
		{
			name:    "a slice without compute under a quota on memory alone is admitted",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000")),
			objects: []runtime.Object{gpuQuota("gpu", quotaMemory, "40000", "0")},
		},
	}
}
