package framework

import (
	"fmt"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// selectorPatch is a patch that gives the webhook of the configuration of
// kind named config the namespace selector.
func selectorPatch(kind, config, webhook, selector string) string {
	return fmt.Sprintf(`
kind: %s
metadata: {name: %s}
webhooks:
- name: %s
  namespaceSelector: %s`, kind, config, webhook, selector)
}

func TestKueueWebhookSelectors(t *testing.T) {
	tests := []struct {
		name    string
		patch   string
		wantErr string
		// selected names the webhooks that end with a namespace selector.
		selected []string
	}{{
		name:     "a mutating webhook gets the patch's selector",
		patch:    selectorPatch("MutatingWebhookConfiguration", "mutating-webhook-configuration", "mpod.kb.io", "{matchExpressions: [{key: kubernetes.io/metadata.name, operator: NotIn, values: [kube-system]}]}"),
		selected: []string{"mpod.kb.io"},
	}, {
		name:     "a validating webhook of the same name as a mutating one is told apart by kind",
		patch:    selectorPatch("ValidatingWebhookConfiguration", "validating-webhook-configuration", "pod.kb.io", "{matchLabels: {a: b}}"),
		selected: []string{"validating/pod.kb.io"},
	}, {
		name:    "a webhook the manifests lack is an error, not a silent no-op",
		patch:   selectorPatch("MutatingWebhookConfiguration", "mutating-webhook-configuration", "mdeployment.kb.io", "{matchLabels: {a: b}}"),
		wantErr: "has no webhook mdeployment.kb.io",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := &kueueWebhooks{
				mutating: &admissionregistrationv1.MutatingWebhookConfiguration{
					ObjectMeta: metav1.ObjectMeta{Name: "mutating-webhook-configuration"},
					Webhooks:   []admissionregistrationv1.MutatingWebhook{{Name: "mpod.kb.io"}, {Name: "pod.kb.io"}},
				},
				validating: &admissionregistrationv1.ValidatingWebhookConfiguration{
					ObjectMeta: metav1.ObjectMeta{Name: "validating-webhook-configuration"},
					Webhooks:   []admissionregistrationv1.ValidatingWebhook{{Name: "pod.kb.io"}},
				},
			}
			err := w.applySelectors([]byte(tc.patch))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one saying %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range w.mutating.Webhooks {
				if h.NamespaceSelector != nil {
					got = append(got, h.Name)
				}
			}
			for _, h := range w.validating.Webhooks {
				if h.NamespaceSelector != nil {
					got = append(got, "validating/"+h.Name)
				}
			}
			if strings.Join(got, ",") != strings.Join(tc.selected, ",") {
				t.Errorf("webhooks with a selector: %v, want %v", got, tc.selected)
			}
		})
	}
}
