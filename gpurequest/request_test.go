package gpurequest

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

func limits(kv ...string) corev1.ResourceRequirements {
	l := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		l[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return corev1.ResourceRequirements{Limits: l}
}

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	privileged := true
	tests := []struct {
		name    string
		pod     corev1.Pod
		want    []ContainerRequest
		wantErr []string
	}{{
		name: "no GPU resources means no requests",
		pod:  corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("cpu", "1")}}}},
	}, {
		name: "memory with a count is read",
		pod:  corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000")}}}},
		want: []ContainerRequest{{Name: "a", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryMiB: 4000}},
	}, {
		// The kubelet calls the device plugin only for the count resource:
		// such a container would be placed and never served.
		name: "a slice without a count is refused, saying what to add",
		pod:  corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpumem", "4000")}}}},
		wantErr: []string{"spec.containers[0].resources.limits[nvidia.com/gpu]: Required value",
			"asks for nvidia.com/gpumem but not for nvidia.com/gpu", "add nvidia.com/gpu: 1"},
	}, {
		name:    "cores without a count are refused too",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpucores", "30")}}}},
		wantErr: []string{"asks for nvidia.com/gpucores but not for nvidia.com/gpu"},
	}, {
		name: "a privileged container asking for a slice is refused",
		pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
			Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1000")}}}},
		wantErr: []string{"spec.containers[0].securityContext.privileged: Forbidden", "slice cannot be enforced"},
	}, {
		name: "a privileged container may have whole GPUs",
		pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
			Resources: limits("nvidia.com/gpu", "2")}}}},
		want: []ContainerRequest{{Name: "a", Kind: gpuv1alpha1.ContainerApp, Count: 2}},
	}, {
		name:    "memory far past an int64 names the limit",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "1e30")}}}},
		wantErr: []string{"limits[nvidia.com/gpumem]", "must be at most 1073741824"},
	}, {
		name:    "a count far past an int64 names the limit",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "1e30")}}}},
		wantErr: []string{"limits[nvidia.com/gpu]", "must be at most 64"},
	}, {
		name:    "a large negative gpucores names its limit, 0 (which asks for no share)",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpucores", "-1e30")}}}},
		wantErr: []string{"limits[nvidia.com/gpucores]", "must be at least 0"},
	}, {
		name: "count, percentage and cores are read",
		pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a",
			Resources: limits("nvidia.com/gpu", "2", "nvidia.com/gpumem-percentage", "25", "nvidia.com/gpucores", "30")}}}},
		want: []ContainerRequest{{Name: "a", Kind: gpuv1alpha1.ContainerApp, Count: 2, MemoryPercent: 25, Cores: 30}},
	}, {
		name: "requests are read when limits are absent",
		pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}}}}}},
		want: []ContainerRequest{{Name: "a", Kind: gpuv1alpha1.ContainerApp, Count: 1}},
	}, {
		name: "init containers come first, sidecars are marked",
		pod: corev1.Pod{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{
				{Name: "init", Resources: limits("nvidia.com/gpu", "1")},
				{Name: "side", RestartPolicy: &always, Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "100")},
			},
			Containers: []corev1.Container{{Name: "app", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpucores", "10")}},
		}},
		want: []ContainerRequest{
			{Name: "init", Kind: gpuv1alpha1.ContainerInit, Count: 1},
			{Name: "side", Kind: gpuv1alpha1.ContainerSidecar, Count: 1, MemoryMiB: 100},
			{Name: "app", Kind: gpuv1alpha1.ContainerApp, Count: 1, Cores: 10},
		},
	}, {
		name:    "cores over 100 are refused with the field and the limit",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpucores", "150")}}}},
		wantErr: []string{"spec.containers[0].resources.limits[nvidia.com/gpucores]", "must be at most 100"},
	}, {
		name:    "percentage over 100 is refused",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpumem-percentage", "101")}}}},
		wantErr: []string{"limits[nvidia.com/gpumem-percentage]", "must be at most 100"},
	}, {
		name:    "zero memory is refused",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpumem", "0")}}}},
		wantErr: []string{"limits[nvidia.com/gpumem]", "must be at least 1"},
	}, {
		name:    "negative count is refused",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "-1")}}}},
		wantErr: []string{"limits[nvidia.com/gpu]", "must be at least 1"},
	}, {
		name: "a count of zero alone means no GPU",
		pod:  corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "0")}}}},
	}, {
		name:    "a count of zero with a slice is refused",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "0", "nvidia.com/gpumem", "10")}}}},
		wantErr: []string{"limits[nvidia.com/gpu]", "must be at least 1"},
	}, {
		// HAMi reads an explicit gpucores: 0 as no cores at all; templates
		// that set every resource, zeros included, are common.
		name: "zero cores with a count reads as the count alone",
		pod:  corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpucores", "0")}}}},
		want: []ContainerRequest{{Name: "a", Kind: gpuv1alpha1.ContainerApp, Count: 1}},
	}, {
		name: "zero cores with memory asks for memory only",
		pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a",
			Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "3000", "nvidia.com/gpucores", "0")}}}},
		want: []ContainerRequest{{Name: "a", Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryMiB: 3000}},
	}, {
		name: "zero cores in requests read as no cores too",
		pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1"), "nvidia.com/gpucores": resource.MustParse("0")}}}}}},
		want: []ContainerRequest{{Name: "a", Kind: gpuv1alpha1.ContainerApp, Count: 1}},
	}, {
		name: "zero cores alone ask for no GPU",
		pod:  corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpucores", "0")}}}},
	}, {
		name: "zero cores with a count of zero ask for no GPU",
		pod:  corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "0", "nvidia.com/gpucores", "0")}}}},
	}, {
		name: "a privileged container may have whole GPUs with zero cores",
		pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", SecurityContext: &corev1.SecurityContext{Privileged: &privileged},
			Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpucores", "0")}}}},
		want: []ContainerRequest{{Name: "a", Kind: gpuv1alpha1.ContainerApp, Count: 1}},
	}, {
		name:    "zero memory with zero cores is still refused",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem", "0", "nvidia.com/gpucores", "0")}}}},
		wantErr: []string{"limits[nvidia.com/gpumem]", "must be at least 1"},
	}, {
		name:    "zero percentage is refused",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "1", "nvidia.com/gpumem-percentage", "0")}}}},
		wantErr: []string{"limits[nvidia.com/gpumem-percentage]", "must be at least 1"},
	}, {
		name:    "a count over the maximum is refused",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpu", "65")}}}},
		wantErr: []string{"must be at most 64"},
	}, {
		name:    "fractional amounts are refused",
		pod:     corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpumem", "1500m")}}}},
		wantErr: []string{"limits[nvidia.com/gpumem]", "must be a whole number"},
	}, {
		name: "memory and percentage together are refused",
		pod: corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a",
			Resources: limits("nvidia.com/gpumem", "10", "nvidia.com/gpumem-percentage", "10")}}}},
		wantErr: []string{"limits[nvidia.com/gpumem-percentage]", "may not be set together with nvidia.com/gpumem"},
	}, {
		name: "errors of several containers are all reported",
		pod: corev1.Pod{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "i", Resources: limits("nvidia.com/gpucores", "101")}},
			Containers:     []corev1.Container{{Name: "a", Resources: limits("nvidia.com/gpumem", "-5")}},
		}},
		wantErr: []string{"spec.initContainers[0]", "spec.containers[0]"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := PodRequests(&tc.pod, DefaultResourceNames())
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got %+v and no error, want an error containing %q", got, tc.wantErr)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("request %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestMemoryOn(t *testing.T) {
	tests := []struct {
		name string
		req  ContainerRequest
		gpu  int64
		want int64
	}{
		{"MiB are taken as asked", ContainerRequest{MemoryMiB: 3000}, 16000, 3000},
		{"a percentage is of the GPU's memory", ContainerRequest{MemoryPercent: 25}, 16000, 4000},
		{"no memory asked takes the whole GPU", ContainerRequest{}, 16000, 16000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.req.MemoryOn(tc.gpu); got != tc.want {
				t.Errorf("MemoryOn(%d) = %d, want %d", tc.gpu, got, tc.want)
			}
		})
	}
}

func TestResourceNamesValidate(t *testing.T) {
	names := DefaultResourceNames()
	if err := names.Validate(); err != nil {
		t.Fatalf("defaults are invalid: %v", err)
	}
	names.Cores = names.Memory
	if err := names.Validate(); err == nil || !strings.Contains(err.Error(), "used twice") {
		t.Errorf("a repeated name: got %v, want an error saying it is used twice", err)
	}
	names = DefaultResourceNames()
	names.Count = ""
	if err := names.Validate(); err == nil {
		t.Error("an empty name: got no error")
	}
}

func TestParseAnnotations(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		want        Selection
		wantErr     []string
	}{{
		name: "no annotations select nothing",
	}, {
		name: "Tessera keys are read and types lower-cased",
		annotations: map[string]string{
			AnnotationGPUType: "A100, H100", AnnotationGPUTypeExclude: "mig",
			AnnotationGPUUUID: "GPU-1,GPU-2", AnnotationGPUUUIDExclude: "GPU-3",
			AnnotationNodePolicy: "spread", AnnotationGPUPolicy: "binpack", AnnotationNUMABind: "true",
		},
		want: Selection{Types: []string{"a100", "h100"}, ExcludeTypes: []string{"mig"},
			UUIDs: []string{"GPU-1", "GPU-2"}, ExcludeUUIDs: []string{"GPU-3"},
			NodePolicy: Spread, GPUPolicy: Binpack, NUMABind: true},
	}, {
		name: "HAMi keys are read as aliases",
		annotations: map[string]string{
			"nvidia.com/use-gputype": "T4", "nvidia.com/nouse-gpuuuid": "GPU-9",
			"hami.io/node-scheduler-policy": "binpack", "nvidia.com/numa-bind": "false",
		},
		want: Selection{Types: []string{"t4"}, ExcludeUUIDs: []string{"GPU-9"}, NodePolicy: Binpack},
	}, {
		name:        "a Tessera key and its HAMi alias that disagree are refused",
		annotations: map[string]string{AnnotationGPUType: "A100", "nvidia.com/use-gputype": "T4"},
		wantErr:     []string{`metadata.annotations[nvidia.com/use-gputype]: Invalid value: "T4": disagrees with tessera.dev/gpu-type ("A100")`},
	}, {
		name:        "disagreeing policies are refused too",
		annotations: map[string]string{AnnotationGPUPolicy: "spread", "hami.io/gpu-scheduler-policy": "binpack"},
		wantErr:     []string{"hami.io/gpu-scheduler-policy", "disagrees with tessera.dev/gpu-policy"},
	}, {
		name:        "a Tessera key and its HAMi alias that agree are read once",
		annotations: map[string]string{AnnotationGPUType: "A100, t4", "nvidia.com/use-gputype": "a100,T4", AnnotationNUMABind: "true", "nvidia.com/numa-bind": "TRUE"},
		want:        Selection{Types: []string{"a100", "t4"}, NUMABind: true},
	}, {
		name:        "a right-to-left override in a type is refused",
		annotations: map[string]string{AnnotationGPUType: "A100\u202e"},
		wantErr:     []string{"tessera.dev/gpu-type", "U+202E", "not printable"},
	}, {
		name:        "a NUL in a UUID is refused",
		annotations: map[string]string{"nvidia.com/use-gpuuuid": "GPU-1\x00"},
		wantErr:     []string{"nvidia.com/use-gpuuuid", "U+0000", "not printable"},
	}, {
		name:        "bytes that are not UTF-8 are refused",
		annotations: map[string]string{AnnotationGPUTypeExclude: "t4\xff"},
		wantErr:     []string{"tessera.dev/gpu-type-exclude", "not printable"},
	}, {
		name:        "an unknown policy is refused naming the key and the choices",
		annotations: map[string]string{"hami.io/node-scheduler-policy": "random"},
		wantErr:     []string{`metadata.annotations[hami.io/node-scheduler-policy]`, `"binpack"`, `"spread"`},
	}, {
		name:        "an empty list entry is refused",
		annotations: map[string]string{AnnotationGPUUUID: "GPU-1,,GPU-2"},
		wantErr:     []string{`metadata.annotations[tessera.dev/gpu-uuid]`, "entry 2 is empty"},
	}, {
		name:        "white space inside an entry is refused",
		annotations: map[string]string{AnnotationGPUUUIDExclude: "GPU 1"},
		wantErr:     []string{"contains white space"},
	}, {
		name:        "an over-long entry is refused with the limit",
		annotations: map[string]string{AnnotationGPUType: strings.Repeat("x", 129)},
		wantErr:     []string{"must be at most 128"},
	}, {
		name:        "numa-bind must be true or false",
		annotations: map[string]string{AnnotationNUMABind: "yes"},
		wantErr:     []string{"tessera.dev/numa-bind", `"true"`},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := metav1.ObjectMeta{Annotations: tc.annotations}
			got, err := ParseAnnotations(pod.Annotations)
			if len(tc.wantErr) > 0 {
				if err == nil {
					t.Fatalf("got %+v and no error", got)
				}
				for _, want := range tc.wantErr {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("error %q does not contain %q", err, want)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if strings.Join(got.Types, ",") != strings.Join(tc.want.Types, ",") ||
				strings.Join(got.ExcludeTypes, ",") != strings.Join(tc.want.ExcludeTypes, ",") ||
				strings.Join(got.UUIDs, ",") != strings.Join(tc.want.UUIDs, ",") ||
				strings.Join(got.ExcludeUUIDs, ",") != strings.Join(tc.want.ExcludeUUIDs, ",") ||
				got.NodePolicy != tc.want.NodePolicy || got.GPUPolicy != tc.want.GPUPolicy || got.NUMABind != tc.want.NUMABind {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
