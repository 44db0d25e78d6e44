package draclaims

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// noGPUNodes is a cluster whose GPU inventory is empty.
type noGPUNodes struct{}

func (noGPUNodes) List(labels.Selector) ([]*gpuv1alpha1.GPUNode, error) { return nil, nil }

// TestTranslateNamesAndShares checks that containers asking alike share one
// template, each gets a claim of its own, and the claims' names pass by
// those the pod already has.
func TestTranslateNamesAndShares(t *testing.T) {
	tr := NewTranslator("gpu.tessera.dev", "nvidia.com/gpu", noGPUNodes{})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team-a"},
		Spec: corev1.PodSpec{ResourceClaims: []corev1.PodResourceClaim{
			{Name: podClaimName(0), ResourceClaimName: new("the-pods-own")},
		}},
	}
	asks := func(name string) Container {
		return Container{
			Request: gpurequest.ContainerRequest{Name: name, Kind: gpuv1alpha1.ContainerApp, Count: 1, MemoryMiB: 4096},
			Path:    field.NewPath("spec", "containers").Key(name),
		}
	}
	out, refusals := tr.Translate(pod, []Container{asks("a"), asks("b")}, gpurequest.Selection{})
	if len(refusals) > 0 {
		t.Fatalf("refused: %v", refusals)
	}
	if len(out.Templates) != 1 || !strings.HasPrefix(out.Templates[0].Name, TemplatePrefix) || out.Templates[0].Namespace != "team-a" {
		t.Fatalf("templates %v, want one named %s... in team-a", out.Templates, TemplatePrefix)
	}
	if len(out.Claims) != 2 {
		t.Fatalf("claims %v, want two", out.Claims)
	}
	for i, want := range []string{podClaimName(1), podClaimName(2)} {
		c := out.Claims[i]
		if c.Name != want || c.ResourceClaimTemplateName == nil || *c.ResourceClaimTemplateName != out.Templates[0].Name {
			t.Errorf("claim %d is %s from %v, want %s from %s", i, c.Name, c.ResourceClaimTemplateName, want, out.Templates[0].Name)
		}
	}
}
