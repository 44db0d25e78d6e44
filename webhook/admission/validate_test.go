package admission

import (
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
)

func TestValidateRefuses(t *testing.T) {
	privileged := func(c corev1.Container) corev1.Container {
		c.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
		return c
	}
	annotated := func(p *corev1.Pod, kv ...string) *corev1.Pod {
		p.Annotations = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			p.Annotations[kv[i]] = kv[i+1]
		}
		return p
	}
	tests := []struct {
		name    string
		pod     *corev1.Pod
		message string
		fields  []string
	}{
		{
			name:    "cores over 100",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "150")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpucores]: Invalid value: "150": must be at most 100`,
			fields:  []string{"spec.containers[0].resources.limits[nvidia.com/gpucores]"},
		},
		{
			name:    "zero memory",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "0")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpumem]: Invalid value: "0": must be at least 1`,
		},
		{
			name:    "negative cores",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "-5")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpucores]: Invalid value: "-5": must be at least 0`,
		},
		{
			name:    "negative count",
			pod:     pod(limited("main", "nvidia.com/gpu", "-1")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "-1": must be at least 1`,
		},
		{
			name:    "fractional memory",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1500m")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpumem]: Invalid value: "1500m": must be a whole number`,
		},
		{
			name:    "percentage over 100",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "120")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpumem-percentage]: Invalid value: "120": must be at most 100`,
		},
		{
			name:    "count over the most GPUs one container may ask for",
			pod:     pod(limited("main", "nvidia.com/gpu", "65")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "65": must be at most 64`,
		},
		{
			name: "memory and percentage together",
			pod:  pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000", "nvidia.com/gpumem-percentage", "50")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpumem-percentage]: Forbidden: ` +
				`may not be set together with nvidia.com/gpumem: ask for memory in MiB or as a percentage, not both`,
		},
		{
			name:    "count of zero with a slice",
			pod:     pod(limited("main", "nvidia.com/gpu", "0", "nvidia.com/gpumem", "4000")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpu]: Invalid value: "0": must be at least 1`,
		},
		{
			name: "privileged container asking for a slice",
			pod:  pod(privileged(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000"))),
			message: `container "main": spec.containers[0].securityContext.privileged: Forbidden: must not be true when the container asks for a GPU slice ` +
				`(nvidia.com/gpumem, nvidia.com/gpumem-percentage or nvidia.com/gpucores): a privileged container sees every GPU on the node, ` +
				`so its slice cannot be enforced; ask for whole GPUs with nvidia.com/gpu alone, or drop privileged`,
			fields: []string{"spec.containers[0].securityContext.privileged"},
		},
		{
			// The mutating webhook adds the count; a pod that reaches
			// validation without it would be placed and never served.
			name: "slice without a count",
			pod:  pod(limited("main", "nvidia.com/gpumem-percentage", "100")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpu]: Required value: the container asks for ` +
				`nvidia.com/gpumem-percentage but not for nvidia.com/gpu, and the kubelet hands GPUs only to containers that ask for nvidia.com/gpu: ` +
				`add nvidia.com/gpu: 1 to its resources.limits`,
		},
		{
			name:    "memory past an int64 names the limit",
			pod:     pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1e30")),
			message: `container "main": spec.containers[0].resources.limits[nvidia.com/gpumem]: Invalid value: "1e30": must be at most 1073741824`,
		},
		{
			name: "a Tessera key and its HAMi alias that disagree",
			pod:  annotated(pod(limited("main", "nvidia.com/gpu", "1")), "tessera.dev/gpu-type", "A100", "nvidia.com/use-gputype", "T4"),
			message: `metadata.annotations[nvidia.com/use-gputype]: Invalid value: "T4": disagrees with tessera.dev/gpu-type ("A100"): ` +
				`the two keys mean the same, so set one of them, or both to the same value`,
		},
		{
			name: "a right-to-left override in a GPU type",
			pod:  annotated(pod(limited("main", "nvidia.com/gpu", "1")), "tessera.dev/gpu-type", "A100\u202e"),
			message: `metadata.annotations[tessera.dev/gpu-type]: Invalid value: "A100\u202e": ` +
				`entry 1 contains the character U+202E, which is not printable: must hold only letters, digits, punctuation and symbols`,
		},
		{
			name: "init container is named by its own path",
			pod: func() *corev1.Pod {
				p := pod()
				p.Spec.InitContainers = []corev1.Container{limited("warmup", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "101")}
				return p
			}(),
			message: `container "warmup": spec.initContainers[0].resources.limits[nvidia.com/gpucores]: Invalid value: "101": must be at most 100`,
		},
		{
			name:    "unknown node policy",
			pod:     annotated(pod(limited("main", "nvidia.com/gpu", "1")), "tessera.dev/node-policy", "fastest"),
			message: `metadata.annotations[tessera.dev/node-policy]: Unsupported value: "fastest": supported values: "binpack", "spread"`,
		},
		{
			name: "gang-fit annotation on a pod created without a controller",
			pod:  annotated(pod(limited("main", "nvidia.com/gpu", "1")), "gpu.tessera.dev/gang-hold", "0b7c6a2e-uid/main"),
			message: `metadata.annotations[gpu.tessera.dev/gang-hold]: Forbidden: must not be set on a pod created without a controller: ` +
				`Kueue sets it, through the pod template of the Workload's owner or when it admits a plain pod, ` +
				`to place the pod in the GPU room held for that Workload, which a pod created with it by hand would take`,
			fields: []string{"metadata.annotations[gpu.tessera.dev/gang-hold]"},
		},
		{
			name:    "unknown GPU policy under the HAMi key",
			pod:     annotated(pod(limited("main", "nvidia.com/gpu", "1")), "hami.io/gpu-scheduler-policy", "random"),
			message: `metadata.annotations[hami.io/gpu-scheduler-policy]: Unsupported value: "random": supported values: "binpack", "spread"`,
		},
		{
			name: "malformed UUID list",
			pod:  annotated(pod(limited("main", "nvidia.com/gpu", "1")), "tessera.dev/gpu-uuid", "GPU-aaaa,,GPU-bbbb"),
			message: `metadata.annotations[tessera.dev/gpu-uuid]: Invalid value: "GPU-aaaa,,GPU-bbbb": ` +
				`entry 2 is empty: must be a comma-separated list of non-empty names`,
		},
		{
			name:    "NUMA binding that is not a boolean",
			pod:     annotated(pod(limited("main", "nvidia.com/gpu", "1")), "nvidia.com/numa-bind", "yes"),
			message: `metadata.annotations[nvidia.com/numa-bind]: Unsupported value: "yes": supported values: "true", "false"`,
		},
		{
			name: "pod already bound to a node",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000"))
				p.Spec.NodeName = "node-1"
				return p
			}(),
			message: `spec.nodeName: Forbidden: must be empty when the pod asks for GPUs: ` +
				`scheduler "tessera-scheduler" must place the pod, since it is what assigns the GPUs`,
		},
		{
			name: "every reason is listed",
			pod: pod(
				limited("a", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "200"),
				privileged(limited("b", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "101")),
			),
			message: `container "a": spec.containers[0].resources.limits[nvidia.com/gpucores]: Invalid value: "200": must be at most 100; ` +
				`container "b": spec.containers[1].resources.limits[nvidia.com/gpumem-percentage]: Invalid value: "101": must be at most 100; ` +
				`container "b": spec.containers[1].securityContext.privileged: Forbidden: must not be true when the container asks for a GPU slice ` +
				`(nvidia.com/gpumem, nvidia.com/gpumem-percentage or nvidia.com/gpucores): a privileged container sees every GPU on the node, ` +
				`so its slice cannot be enforced; ask for whole GPUs with nvidia.com/gpu alone, or drop privileged`,
			fields: []string{
				"spec.containers[0].resources.limits[nvidia.com/gpucores]",
				"spec.containers[1].resources.limits[nvidia.com/gpumem-percentage]",
				"spec.containers[1].securityContext.privileged",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAdmitter(t, DefaultConfig(), gpuNode("node-1", 100, 81920))
			resp := a.Validate(testContext(t), createRequest(t, tc.pod))
			if resp.Allowed {
				t.Fatal("Validate admitted the pod, want it refused")
			}
			if resp.UID != "uid-1" {
				t.Errorf("UID = %q, want the request's", resp.UID)
			}
			st := resp.Result
			if st == nil || st.Code != http.StatusForbidden || st.Reason != metav1.StatusReasonForbidden {
				t.Fatalf("result = %+v, want 403 Forbidden", st)
			}
			if st.Message != tc.message {
				t.Errorf("message:\n got: %s\nwant: %s", st.Message, tc.message)
			}
			if tc.fields != nil {
				var got []string
				for _, c := range st.Details.Causes {
					got = append(got, c.Field)
				}
				if diff := cmp.Diff(tc.fields, got); diff != "" {
					t.Errorf("cause fields (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestValidateAdmits(t *testing.T) {
	tests := []struct {
		name    string
		pod     *corev1.Pod
		objects []runtime.Object
	}{
		{name: "pod without GPUs", pod: pod(limited("main", "cpu", "1"))},
		{name: "slice within every limit", pod: pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "4000", "nvidia.com/gpucores", "100"))},
		{
			name: "privileged container with whole GPUs",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1"))
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
				return p
			}(),
		},
		{
			name: "unprivileged security context with a slice",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "10"))
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(false)}
				return p
			}(),
		},
		{name: "count of zero alone", pod: pod(limited("main", "nvidia.com/gpu", "0"))},
		{
			// HAMi reads gpucores: 0 as no cores at all: whole GPUs, which a
			// privileged container may have.
			name: "privileged container with whole GPUs and zero cores",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "0"))
				p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)}
				return p
			}(),
		},
		{name: "memory with zero cores", pod: pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000", "nvidia.com/gpucores", "0"))},
		{
			name: "well-formed annotations under both keys",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1"))
				p.Annotations = map[string]string{
					"tessera.dev/gpu-type": "A100,H100", "nvidia.com/nouse-gpuuuid": "GPU-1, GPU-2",
					"hami.io/node-scheduler-policy": "spread", "tessera.dev/numa-bind": "true",
				}
				return p
			}(),
		},
		{
			name: "gang-fit annotation on a pod of a Job",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpu", "1"))
				p.Annotations = map[string]string{"gpu.tessera.dev/gang-hold": "0b7c6a2e-uid/main"}
				p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: "job-uid", Controller: ptr.To(true)}}
				return p
			}(),
		},
		{
			name: "bad annotations on a pod that asks for no GPU",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "cpu", "1"))
				p.Annotations = map[string]string{"tessera.dev/node-policy": "fastest"}
				return p
			}(),
		},
		{
			name: "bound pod that asks for no GPU",
			pod:  func() *corev1.Pod { p := pod(limited("main", "cpu", "1")); p.Spec.NodeName = "node-1"; return p }(),
		},
		{
			name: "opted-out pod with a request Tessera would refuse",
			pod: func() *corev1.Pod {
				p := pod(limited("main", "nvidia.com/gpucores", "500"))
				p.Labels = map[string]string{DefaultOptOutLabel: DefaultOptOutValue}
				return p
			}(),
		},
		{
			name:    "pod in an opted-out namespace with a request Tessera would refuse",
			pod:     pod(limited("main", "nvidia.com/gpucores", "500")),
			objects: []runtime.Object{namespace(testNamespace, map[string]string{DefaultOptOutLabel: DefaultOptOutValue})},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			objs := append([]runtime.Object{gpuNode("node-1", 100, 81920, 81920)}, tc.objects...)
			a := newAdmitter(t, DefaultConfig(), objs...)
			resp := a.Validate(testContext(t), createRequest(t, mutated(t, a, tc.pod)))
			if !resp.Allowed {
				t.Fatalf("Validate refused the pod: %s", resp.Result.Message)
			}
			if len(resp.Warnings) > 0 {
				t.Errorf("unexpected warnings: %q", resp.Warnings)
			}
			if len(resp.Patch) > 0 {
				t.Errorf("validation returned a patch: %s", resp.Patch)
			}
		})
	}
}

func TestValidateWarns(t *testing.T) {
	tests := []struct {
		name  string
		nodes []runtime.Object
		pod   *corev1.Pod
		want  []string
	}{
		{
			name: "no node reports GPUs",
			pod:  pod(limited("main", "nvidia.com/gpu", "1")),
			want: []string{noInventoryWarning},
		},
		{
			name:  "memory larger than any GPU",
			nodes: []runtime.Object{gpuNode("a", 100, 24576, 24576), gpuNode("b", 100, 81920)},
			pod:   pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "90000")),
			want:  []string{`container "main" asks for 90000 MiB of GPU memory, more than any GPU in the cluster has (largest: 81920 MiB)`},
		},
		{
			name:  "cores more than any GPU offers",
			nodes: []runtime.Object{gpuNode("a", 50, 24576)},
			pod:   pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpucores", "80")),
			want:  []string{`container "main" asks for 80 GPU cores, more than any GPU in the cluster has (most: 50)`},
		},
		{
			name:  "more GPUs than any node has",
			nodes: []runtime.Object{gpuNode("a", 100, 24576, 24576), gpuNode("b", 100, 81920)},
			pod:   pod(limited("main", "nvidia.com/gpu", "4")),
			want:  []string{`container "main" asks for 4 GPUs, more than any node in the cluster has (most: 2)`},
		},
		{
			name:  "no node has enough GPUs that large",
			nodes: []runtime.Object{gpuNode("a", 100, 24576, 24576), gpuNode("b", 100, 81920)},
			pod:   pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "40000")),
			want:  []string{`container "main" asks for 2 GPUs of at least 40000 MiB each; no node in the cluster has that many`},
		},
		{
			name:  "no node has enough GPUs with that many cores",
			nodes: []runtime.Object{gpuNode("a", 100, 24576), gpuNode("b", 50, 81920, 81920)},
			pod:   pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "20000", "nvidia.com/gpucores", "60")),
			want:  []string{`container "main" asks for 2 GPUs of at least 20000 MiB and 60 cores each; no node in the cluster has that many`},
		},
		{
			name:  "only the container that cannot fit is named",
			nodes: []runtime.Object{gpuNode("a", 100, 24576)},
			pod:   pod(limited("small", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000"), limited("big", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "30000")),
			want:  []string{`container "big" asks for 30000 MiB of GPU memory, more than any GPU in the cluster has (largest: 24576 MiB)`},
		},
		{
			name:  "request that fits one node gets no warning",
			nodes: []runtime.Object{gpuNode("a", 100, 24576, 24576), gpuNode("b", 100, 81920, 81920)},
			pod:   pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpumem", "40000", "nvidia.com/gpucores", "100")),
		},
		{
			name:  "percentage fits any GPU",
			nodes: []runtime.Object{gpuNode("a", 100, 1024)},
			pod:   pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "100")),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			checkWarnings(t, newAdmitter(t, DefaultConfig(), tc.nodes...), tc.pod, tc.want)
		})
	}
}
