package helm

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestOperations pins what keeps Tessera running through node pressure,
// drains and restarts, for every value set.
func TestOperations(t *testing.T) {
	for name, v := range variants() {
		t.Run(name, func(t *testing.T) {
			objs := v.mustTemplate(t)
			plugin := podTemplate(t, findOne(t, objs, "DaemonSet", "-device-plugin"))
			scheduler := podTemplate(t, findOne(t, objs, "Deployment", "-scheduler"))
			webhook := podTemplate(t, findOne(t, objs, "Deployment", "-webhook"))

			t.Run("priority classes", func(t *testing.T) {
				for _, tc := range []struct {
					name     string
					template corev1.PodTemplateSpec
					want     string
				}{
					{"device plugin", plugin, "system-node-critical"},
					{"scheduler", scheduler, "system-cluster-critical"},
					{"webhook", webhook, "system-cluster-critical"},
				} {
					if got := tc.template.Spec.PriorityClassName; got != tc.want {
						t.Errorf("the %s runs with priority class %q, want %q", tc.name, got, tc.want)
					}
				}
			})

			t.Run("device plugin probes", func(t *testing.T) {
				c := plugin.Spec.Containers[0]
				for _, tc := range []struct {
					kind  string
					probe *corev1.Probe
					path  string
				}{{"startup", c.StartupProbe, "/healthz"}, {"liveness", c.LivenessProbe, "/healthz"}, {"readiness", c.ReadinessProbe, "/readyz"}} {
					if tc.probe == nil || tc.probe.HTTPGet == nil || tc.probe.HTTPGet.Path != tc.path || tc.probe.HTTPGet.Port != intstr.FromString("metrics") {
						t.Errorf("the device plugin's %s probe is %+v, want GET %s on the metrics port", tc.kind, tc.probe, tc.path)
					}
				}
			})

			t.Run("extender is a native sidecar of kube-scheduler", func(t *testing.T) {
				isExtender := func(c corev1.Container) bool { return c.Name == "extender" }
				if v.schedulerMode() == "plugin" {
					// Tessera runs inside kube-scheduler: no extender at all.
					if slices.ContainsFunc(scheduler.Spec.InitContainers, isExtender) || slices.ContainsFunc(scheduler.Spec.Containers, isExtender) {
						t.Errorf("plugin mode runs an extender beside tessera-scheduler")
					}
					return
				}
				i := slices.IndexFunc(scheduler.Spec.InitContainers, isExtender)
				if i < 0 {
					t.Fatalf("the extender is not an init container")
				}
				ext := scheduler.Spec.InitContainers[i]
				if ext.RestartPolicy == nil || *ext.RestartPolicy != corev1.ContainerRestartPolicyAlways {
					t.Errorf("the extender's restartPolicy is %v, want Always (a sidecar)", ext.RestartPolicy)
				}
				// kube-scheduler starts only after the startup probe passes.
				if ext.StartupProbe == nil || ext.StartupProbe.HTTPGet == nil || ext.StartupProbe.HTTPGet.Path != "/readyz" {
					t.Errorf("the extender's startup probe is %+v, want GET /readyz", ext.StartupProbe)
				}
				if slices.ContainsFunc(scheduler.Spec.Containers, isExtender) ||
					!slices.ContainsFunc(scheduler.Spec.Containers, func(c corev1.Container) bool { return c.Name == "kube-scheduler" }) {
					t.Errorf("containers %v, want kube-scheduler and not the extender", scheduler.Spec.Containers)
				}
			})

			t.Run("webhook drains before it stops", func(t *testing.T) {
				c := webhook.Spec.Containers[0]
				drain := int64(0)
				if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
					drain = c.Lifecycle.PreStop.Sleep.Seconds
				}
				want := int64(10)
				if w, _ := v.values["webhook"].(map[string]any); w != nil && w["drainSeconds"] != nil {
					want = int64(w["drainSeconds"].(int))
				}
				if drain != want {
					t.Errorf("the webhook's preStop sleep is %d s, want %d", drain, want)
				}
				var shutdown time.Duration
				for _, arg := range c.Command {
					if value, ok := strings.CutPrefix(arg, "--shutdown-timeout="); ok {
						var err error
						if shutdown, err = time.ParseDuration(value); err != nil {
							t.Fatal(err)
						}
					}
				}
				if shutdown <= 0 {
					t.Fatalf("the webhook has no --shutdown-timeout: %v", c.Command)
				}
				grace := webhook.Spec.TerminationGracePeriodSeconds
				if grace == nil || time.Duration(*grace)*time.Second < time.Duration(drain)*time.Second+shutdown {
					t.Errorf("terminationGracePeriodSeconds %v does not cover the drain (%d s) and the shutdown (%v)", grace, drain, shutdown)
				}
			})

			t.Run("disruption budgets", func(t *testing.T) {
				replicas := map[string]int{"-scheduler": 1, "-webhook": 2}
				for _, kind := range []string{"scheduler", "webhook"} {
					if values, _ := v.values[kind].(map[string]any); values != nil && values["replicas"] != nil {
						replicas["-"+kind] = values["replicas"].(int)
					}
				}
				for suffix, n := range replicas {
					var pdbs []*unstructured.Unstructured
					for _, o := range find(objs, "PodDisruptionBudget") {
						if strings.HasSuffix(o.GetName(), suffix) {
							pdbs = append(pdbs, o)
						}
					}
					// One replica with a budget could never be drained.
					want := 0
					if n > 1 {
						want = 1
					}
					if len(pdbs) != want {
						t.Fatalf("%d PodDisruptionBudgets for %s with %d replicas, want %d", len(pdbs), suffix, n, want)
					}
					if want == 1 {
						if got, _, _ := unstructured.NestedInt64(pdbs[0].Object, "spec", "minAvailable"); got != 1 {
							t.Errorf("%s minAvailable %d, want 1", pdbs[0].GetName(), got)
						}
					}
				}
			})
		})
	}
}
