package admission

import (
	"testing"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/tessera-gpu/tessera/webhook/draclaims"
)

func TestMutateForDRAReadsKnownTemplatesFromTheInformer(t *testing.T) {
	a, kube := draAdmitter(t)
	p := pod(limited("cuda", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000"))
	out, templates := mutateDRA(t, a, kube, p)
	tmpl := claimOf(t, out, &out.Spec.Containers[0], templates)

	// A new webhook replica whose informer has listed the template.
	kube = fake.NewClientset(tmpl)
	a.templates = draclaims.NewClaimTemplates(kube, templateLister(t, tmpl))
	for range 3 {
		if resp := a.Mutate(testContext(t), createRequest(t, p)); !resp.Allowed || len(resp.Patch) == 0 {
			t.Fatalf("refused: %+v", resp.Result)
		}
	}
	if actions := kube.Actions(); len(actions) > 0 {
		t.Errorf("admitting pods of a known shape called the API server: %v", actions)
	}

	t.Run("a template the informer holds with another spec refuses the pod", func(t *testing.T) {
		changed := tmpl.DeepCopy()
		changed.Spec.Spec.Devices.Requests[0].Exactly.Count = 8
		a.templates = draclaims.NewClaimTemplates(fake.NewClientset(changed), templateLister(t, changed))
		if resp := a.Mutate(testContext(t), createRequest(t, p)); resp.Allowed {
			t.Error("admitted a pod whose template has another spec")
		}
	})
}
