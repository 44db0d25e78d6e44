package webhook

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
	"github.com/tessera-gpu/tessera/webhook/app"
)

// loadShipped reads the webhook configurations in deploy/webhook, refusing
// unknown fields so that a typo there fails here.
func loadShipped(t testing.TB) (*admissionregistrationv1.MutatingWebhookConfiguration, *admissionregistrationv1.ValidatingWebhookConfiguration) {
	t.Helper()
	dir := filepath.Join(framework.RepoRoot(), "deploy", "webhook")
	m := &admissionregistrationv1.MutatingWebhookConfiguration{}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	for file, obj := range map[string]any{"mutatingwebhookconfiguration.yaml": m, "validatingwebhookconfiguration.yaml": v} {
		raw, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.UnmarshalStrict(raw, obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
	}
	return m, v
}

// shippedWebhook is what both configurations' webhooks share.
type shippedWebhook struct {
	name              string
	clientConfig      admissionregistrationv1.WebhookClientConfig
	rules             []admissionregistrationv1.RuleWithOperations
	failurePolicy     *admissionregistrationv1.FailurePolicyType
	sideEffects       *admissionregistrationv1.SideEffectClass
	timeoutSeconds    *int32
	versions          []string
	namespaceSelector *metav1.LabelSelector
	objectSelector    *metav1.LabelSelector
	matchConditions   []admissionregistrationv1.MatchCondition
}

func shippedWebhooks(t testing.TB) []shippedWebhook {
	m, v := loadShipped(t)
	var out []shippedWebhook
	for _, w := range m.Webhooks {
		out = append(out, shippedWebhook{w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.SideEffects, w.TimeoutSeconds,
			w.AdmissionReviewVersions, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions})
	}
	for _, w := range v.Webhooks {
		out = append(out, shippedWebhook{w.Name, w.ClientConfig, w.Rules, w.FailurePolicy, w.SideEffects, w.TimeoutSeconds,
			w.AdmissionReviewVersions, w.NamespaceSelector, w.ObjectSelector, w.MatchConditions})
	}
	return out
}

// TestShippedConfigurations pins what the manifests must say for the
// daemon's defaults to work; the end-to-end tests prove the rest.
func TestShippedConfigurations(t *testing.T) {
	m, v := loadShipped(t)
	defaults := app.NewOptions()
	if m.Name != defaults.MutatingWebhookConfiguration || v.Name != defaults.ValidatingWebhookConfiguration {
		t.Errorf("configuration names %q and %q, want the webhook's defaults %q and %q",
			m.Name, v.Name, defaults.MutatingWebhookConfiguration, defaults.ValidatingWebhookConfiguration)
	}
	if len(m.Webhooks) != 2 || len(v.Webhooks) != 3 {
		t.Fatalf("want the mutating webhooks of pods and Jobs, and the validating ones of pods, Jobs and Deployments, got %d and %d", len(m.Webhooks), len(v.Webhooks))
	}
	for _, w := range m.Webhooks {
		if p := w.ReinvocationPolicy; p == nil || *p != admissionregistrationv1.IfNeededReinvocationPolicy {
			t.Errorf("%s: reinvocationPolicy = %v, want IfNeeded", w.Name, p)
		}
	}
	optOut := labels.Set{admission.DefaultOptOutLabel: admission.DefaultOptOutValue}
	for _, w := range shippedWebhooks(t) {
		t.Run(w.name, func(t *testing.T) {
			// A Deployment is only warned about: an unreachable webhook
			// must not block it.
			wantPolicy := admissionregistrationv1.Fail
			if strings.Contains(w.name, ".deployments.") {
				wantPolicy = admissionregistrationv1.Ignore
			}
			if w.failurePolicy == nil || *w.failurePolicy != wantPolicy {
				t.Errorf("failurePolicy = %v, want %s", w.failurePolicy, wantPolicy)
			}
			// The mutating webhook creates claim templates in DRA mode.
			wantSideEffects := admissionregistrationv1.SideEffectClassNone
			if w.name == m.Webhooks[0].Name {
				wantSideEffects = admissionregistrationv1.SideEffectClassNoneOnDryRun
			}
			if w.sideEffects == nil || *w.sideEffects != wantSideEffects {
				t.Errorf("sideEffects = %v, want %s", w.sideEffects, wantSideEffects)
			}
			if w.timeoutSeconds == nil || *w.timeoutSeconds > 10 {
				t.Errorf("timeoutSeconds = %v, want set and at most 10", w.timeoutSeconds)
			}
			if !slices.Equal(w.versions, []string{"v1"}) {
				t.Errorf("admissionReviewVersions = %v, want [v1]", w.versions)
			}
			if s := w.clientConfig.Service; s == nil || s.Name != defaults.ServiceName || s.Namespace != defaults.Namespace {
				t.Errorf("clientConfig.service = %+v, want %s/%s", s, defaults.Namespace, defaults.ServiceName)
			}
			if len(w.clientConfig.CABundle) != 0 {
				t.Error("caBundle is set; the self-managed webhook writes it")
			}
			checkRules(t, w)
			nsSel, err := metav1.LabelSelectorAsSelector(w.namespaceSelector)
			if err != nil {
				t.Fatal(err)
			}
			for _, ns := range []string{"kube-system", defaults.Namespace} {
				if nsSel.Matches(labels.Set{"kubernetes.io/metadata.name": ns}) {
					t.Errorf("namespaceSelector selects %s", ns)
				}
			}
			if nsSel.Matches(optOut) {
				t.Error("namespaceSelector selects an opted-out namespace")
			}
			if !nsSel.Matches(labels.Set{"kubernetes.io/metadata.name": "team-a"}) {
				t.Error("namespaceSelector skips an ordinary namespace")
			}
			objSel, err := metav1.LabelSelectorAsSelector(w.objectSelector)
			if err != nil {
				t.Fatal(err)
			}
			if objSel.Matches(optOut) || !objSel.Matches(labels.Set{"app": "x"}) {
				t.Error("objectSelector must skip opted-out pods and only them")
			}
			if len(w.matchConditions) != 1 {
				t.Errorf("want one matchCondition selecting GPU pods, got %d", len(w.matchConditions))
			}
		})
	}
}

// checkRules checks that a pods webhook selects pod creations only, a
// jobs webhook batch/v1 Job creations and updates (a suspended Job's
// resources may change) only, and a deployments webhook apps/v1
// Deployment creations and updates (the queue label may be added) only.
func checkRules(t *testing.T, w shippedWebhook) {
	t.Helper()
	group, resource, ops := "", "pods", []admissionregistrationv1.OperationType{admissionregistrationv1.Create}
	switch {
	case strings.Contains(w.name, ".jobs."):
		group, resource = "batch", "jobs"
		ops = append(ops, admissionregistrationv1.Update)
	case strings.Contains(w.name, ".deployments."):
		group, resource = "apps", "deployments"
		ops = append(ops, admissionregistrationv1.Update)
	}
	if len(w.rules) != 1 || !slices.Equal(w.rules[0].APIGroups, []string{group}) || !slices.Equal(w.rules[0].Resources, []string{resource}) ||
		!slices.Equal(w.rules[0].Operations, ops) {
		t.Errorf("rules = %+v, want %s %v only", w.rules, resource, ops)
	}
}
