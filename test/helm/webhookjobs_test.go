package helm

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestWebhookConfigurationsReviewJobs checks that each configuration
// sends batch/v1 Jobs whose pod template asks for a Tessera resource, on
// creation and update, to the same path as pods, with the pod webhook's
// failure policy, timeout and selectors.
func TestWebhookConfigurationsReviewJobs(t *testing.T) {
	objs := defaults().mustTemplate(t)
	for kind, prefix := range map[string]string{"MutatingWebhookConfiguration": "mutate", "ValidatingWebhookConfiguration": "validate"} {
		t.Run(kind, func(t *testing.T) {
			hooks, _, _ := unstructured.NestedSlice(findOne(t, objs, kind, "").Object, "webhooks")
			byName := map[string]map[string]any{}
			for _, h := range hooks {
				h := h.(map[string]any)
				byName[h["name"].(string)] = h
			}
			pods, jobs := byName[prefix+".pods.gpu.tessera.dev"], byName[prefix+".jobs.gpu.tessera.dev"]
			if pods == nil || jobs == nil {
				t.Fatalf("want webhooks %s.pods and %s.jobs, got %d webhooks", prefix, prefix, len(hooks))
			}
			wantRules := []any{map[string]any{
				"apiGroups": []any{"batch"}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE", "UPDATE"},
				"resources": []any{"jobs"}, "scope": "Namespaced",
			}}
			if got := normalize(t, jobs["rules"]); !reflect.DeepEqual(got, wantRules) {
				t.Errorf("the jobs webhook's rules are %v, want %v", got, wantRules)
			}
			for _, field := range []string{"failurePolicy", "timeoutSeconds", "namespaceSelector", "objectSelector", "admissionReviewVersions"} {
				if !reflect.DeepEqual(normalize(t, jobs[field]), normalize(t, pods[field])) {
					t.Errorf("the jobs webhook's %s is %v, the pods webhook's %v", field, jobs[field], pods[field])
				}
			}
			if !reflect.DeepEqual(normalize(t, jobs["clientConfig"]), normalize(t, pods["clientConfig"])) {
				t.Errorf("the jobs webhook calls %v, the pods webhook %v", jobs["clientConfig"], pods["clientConfig"])
			}
			conditions, _ := jobs["matchConditions"].([]any)
			if len(conditions) != 1 || !strings.Contains(conditions[0].(map[string]any)["expression"].(string), "object.spec.template.spec.initContainers") {
				t.Errorf("the jobs webhook's matchConditions %v do not read the pod template's containers", conditions)
			}
		})
	}
}
