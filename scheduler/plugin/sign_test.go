package plugin

import (
	"context"
	"encoding/json"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	fwk "k8s.io/kube-scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// signature is the pod's signature as kube-scheduler builds it from the
// plugin's fragments, or the status of a refusal.
func signature(t *testing.T, p *Plugin, pod *v1.Pod) (string, *fwk.Status) {
	t.Helper()
	fragments, status := p.SignPod(context.Background(), pod)
	if !status.IsSuccess() {
		return "", status
	}
	sig := map[string]any{}
	for _, f := range fragments {
		sig[f.Key] = f.Value
	}
	data, err := json.Marshal(sig)
	if err != nil {
		t.Fatal(err)
	}
	return string(data), nil
}

// annotated is a 4096 MiB slice pod with the annotations.
func annotated(name string, annotations map[string]string) *v1.Pod {
	pod := gpuPod(name, 4096)
	pod.Annotations = annotations
	return pod
}

// withLimit is a 4096 MiB slice pod with one more limit.
func withLimit(name string, resourceName v1.ResourceName, value int64) *v1.Pod {
	pod := gpuPod(name, 4096)
	pod.Spec.Containers[0].Resources.Limits[resourceName] = *resource.NewQuantity(value, resource.DecimalSI)
	return pod
}

func TestSignPodShares(t *testing.T) {
	names := gpurequest.DefaultResourceNames()
	renamed := gpuPod("renamed", 4096)
	renamed.Spec.Containers[0].Name = "other"
	renamed.Labels = map[string]string{"app": "x"}
	tests := []struct {
		name  string
		a, b  *v1.Pod
		share bool
	}{
		{"pods of one shape share, whatever their names", gpuPod("a", 4096), renamed, true},
		{"a HAMi key and the Tessera key saying the same share",
			annotated("a", map[string]string{gpurequest.AnnotationGPUType: "A100"}),
			annotated("b", map[string]string{"nvidia.com/use-gputype": "a100"}), true},
		{"the default node policy and the same policy asked for share",
			gpuPod("a", 4096), annotated("b", map[string]string{gpurequest.AnnotationNodePolicy: "binpack"}), true},
		{"memory", gpuPod("a", 4096), gpuPod("b", 8192), false},
		{"cores", gpuPod("a", 4096), withLimit("b", names.Cores, 30), false},
		{"GPU count", gpuPod("a", 4096), withLimit("b", names.Count, 2), false},
		{"GPU type", gpuPod("a", 4096), annotated("b", map[string]string{gpurequest.AnnotationGPUType: "a100"}), false},
		{"excluded GPU", gpuPod("a", 4096), annotated("b", map[string]string{gpurequest.AnnotationGPUUUIDExclude: "GPU-0"}), false},
		{"node policy", gpuPod("a", 4096), annotated("b", map[string]string{gpurequest.AnnotationNodePolicy: "spread"}), false},
		{"GPU policy", gpuPod("a", 4096), annotated("b", map[string]string{gpurequest.AnnotationGPUPolicy: "binpack"}), false},
		{"NUMA binding", gpuPod("a", 4096), annotated("b", map[string]string{gpurequest.AnnotationNUMABind: "true"}), false},
		{"MIG mode", gpuPod("a", 4096), annotated("b", map[string]string{gpurequest.AnnotationGPUMode: "mig"}), false},
		{"MIG profile", annotated("a", map[string]string{gpurequest.AnnotationMIGProfile: "1g.10gb"}),
			annotated("b", map[string]string{gpurequest.AnnotationMIGProfile: "3g.40gb"}), false},
		{"namespace, whose quota applies", gpuPod("a", 4096), func() *v1.Pod { p := gpuPod("b", 4096); p.Namespace = "team-b"; return p }(), false},
	}
	p, _, _ := newTestPlugin(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, st := signature(t, p, tt.a)
			if st != nil {
				t.Fatalf("SignPod(%s): %v", tt.a.Name, st)
			}
			b, st := signature(t, p, tt.b)
			if st != nil {
				t.Fatalf("SignPod(%s): %v", tt.b.Name, st)
			}
			if (a == b) != tt.share {
				t.Errorf("shared a signature: %t, want %t\n%s\n%s", a == b, tt.share, a, b)
			}
		})
	}
}

func TestSignPodRefuses(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	holding := gpuPod("holding", 4096)
	place(v, holding, "GPU-0", 4096)
	nominated := gpuPod("nominated", 4096)
	nominated.Status.NominatedNodeName = node
	podGroup := gpuPod("pod-group", 4096)
	podGroup.Spec.SchedulingGroup = &v1.PodSchedulingGroup{}
	tests := []struct {
		name string
		pod  *v1.Pod
		// signed: SignPod succeeds; then fragments says whether it
		// returns any.
		signed, fragments bool
	}{
		{"a slice pod", gpuPod("a", 4096), true, true},
		{"a pod without GPUs, which the plugin skips", &v1.Pod{}, true, false},
		{"a pod that holds GPUs, placed without them", holding, false, false},
		{"a nominated pod", nominated, false, false},
		{"a PodGroup's pod", podGroup, false, false},
		{"a pod of a gang with held room", annotated("gang", map[string]string{gpuv1alpha1.GangHoldAnnotation: "team/job"}), false, false},
		{"an invalid request", withLimit("invalid", gpurequest.DefaultResourceNames().Cores, 150), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fragments, st := p.SignPod(context.Background(), tt.pod)
			if st.IsSuccess() != tt.signed {
				t.Fatalf("signed: %t (%v), want %t", st.IsSuccess(), st, tt.signed)
			}
			if !tt.signed && st.Code() != fwk.Unschedulable {
				t.Errorf("refused with %v, want Unschedulable (not signable)", st.Code())
			}
			if (len(fragments) > 0) != tt.fragments {
				t.Errorf("fragments %v, want some: %t", fragments, tt.fragments)
			}
		})
	}
}
