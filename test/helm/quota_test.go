package helm

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// TestGPUQuotaSetUp checks what the GPU quota needs of the chart in every
// variant: the webhook may list and watch ResourceQuotas, which its
// informer does before it is ready, and kube-scheduler ignores the totals
// the webhook writes, which no node advertises (extender mode: the
// extender's managedResources; plugin mode: NodeResourcesFit's
// ignoredResourceGroups).
func TestGPUQuotaSetUp(t *testing.T) {
	for name, v := range variants() {
		t.Run(name, func(t *testing.T) {
			objs := v.mustTemplate(t)
			a := accessOf(t, objs, v.namespace, serviceAccountOf(t, objs, "Deployment", "-webhook"))
			for _, verb := range []string{"list", "watch"} {
				if !a.allows("", "resourcequotas", verb) {
					t.Errorf("the webhook may not %s ResourceQuotas, which its informer needs", verb)
				}
			}
			config := schedulerConfig(t, objs)
			if extenders, _, _ := unstructured.NestedSlice(config, "extenders"); len(extenders) > 0 {
				checkExtenderIgnoresQuota(t, extenders)
				return
			}
			checkFitIgnoresQuota(t, config)
		})
	}
}

func checkExtenderIgnoresQuota(t *testing.T, extenders []any) {
	t.Helper()
	managed, _, _ := unstructured.NestedSlice(extenders[0].(map[string]any), "managedResources")
	for _, name := range gpurequest.QuotaResources {
		if !slices.ContainsFunc(managed, func(m any) bool {
			r := m.(map[string]any)
			return r["name"] == string(name) && r["ignoredByScheduler"] == true
		}) {
			t.Errorf("the extender's managedResources do not have %s ignored by kube-scheduler: %v", name, managed)
		}
	}
}

func checkFitIgnoresQuota(t *testing.T, config map[string]any) {
	t.Helper()
	profiles, _, _ := unstructured.NestedSlice(config, "profiles")
	plugins, _, _ := unstructured.NestedSlice(profiles[0].(map[string]any), "pluginConfig")
	for _, p := range plugins {
		entry := p.(map[string]any)
		if entry["name"] != "NodeResourcesFit" {
			continue
		}
		groups, _, _ := unstructured.NestedStringSlice(entry, "args", "ignoredResourceGroups")
		if !slices.Contains(groups, gpuv1alpha1.GroupName) {
			t.Errorf("NodeResourcesFit's ignoredResourceGroups = %v, want %s", groups, gpuv1alpha1.GroupName)
		}
		return
	}
	t.Errorf("plugin mode's profile configures no NodeResourcesFit: kube-scheduler would find every node short of %v", gpurequest.QuotaResources)
}
