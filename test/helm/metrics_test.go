package helm

import (
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// scraped are the containers that serve /metrics, by the component label
// of their pods.
var scraped = map[string]struct{ kind, suffix, container string }{
	"device-plugin": {"DaemonSet", "-device-plugin", "device-plugin"},
	"webhook":       {"Deployment", "-webhook", "webhook"},
	"scheduler":     {"Deployment", "-scheduler", "extender"},
}

// podTemplate decodes a rendered workload's pod template.
func podTemplate(t testing.TB, w *unstructured.Unstructured) corev1.PodTemplateSpec {
	t.Helper()
	if w.GetKind() == "DaemonSet" {
		var ds appsv1.DaemonSet
		fromUnstructured(t, w, &ds)
		return ds.Spec.Template
	}
	var d appsv1.Deployment
	fromUnstructured(t, w, &d)
	return d.Spec.Template
}

// flagPort returns the port of a host:port flag on a command line.
func flagPort(t testing.TB, command []string, name string) (host string, port int) {
	t.Helper()
	for _, arg := range command {
		if value, ok := strings.CutPrefix(arg, "--"+name+"="); ok {
			host, p, err := net.SplitHostPort(value)
			if err != nil {
				t.Fatalf("--%s=%s: %v", name, value, err)
			}
			port, err := strconv.Atoi(p)
			if err != nil {
				t.Fatalf("--%s=%s: %v", name, value, err)
			}
			return host, port
		}
	}
	t.Fatalf("no --%s in %v", name, command)
	return "", 0
}

// pluginMetricsAddress returns the host and port of the Tessera plugin's
// metricsAddress in the rendered scheduler configuration.
func pluginMetricsAddress(t testing.TB, objs []*unstructured.Unstructured) (host string, port int) {
	t.Helper()
	profiles, _ := schedulerConfig(t, objs)["profiles"].([]any)
	for _, p := range profiles {
		entries, _ := p.(map[string]any)["pluginConfig"].([]any)
		for _, e := range entries {
			entry, _ := e.(map[string]any)
			args, _ := entry["args"].(map[string]any)
			if entry["name"] != "Tessera" {
				continue
			}
			addr, _ := args["metricsAddress"].(string)
			return flagPort(t, []string{"--metrics-address=" + addr}, "metrics-address")
		}
	}
	t.Fatal("the scheduler configuration has no Tessera plugin arguments")
	return "", 0
}

// TestServiceMonitor checks that every daemon's metrics port is reached:
// a Service selecting its pods names the container's metrics port, the
// ServiceMonitor selects that Service, and the probes ask that port.
func TestServiceMonitor(t *testing.T) {
	for name, v := range variants() {
		t.Run(name, func(t *testing.T) {
			objs := v.mustTemplate(t)
			monitors := find(objs, "ServiceMonitor")
			for component, c := range scraped {
				t.Run(component, func(t *testing.T) {
					// In plugin mode the Tessera plugin inside
					// tessera-scheduler serves the scheduler's metrics.
					pluginMode := component == "scheduler" && v.schedulerMode() == "plugin"
					if pluginMode {
						c.container = "kube-scheduler"
					}
					template := podTemplate(t, findOne(t, objs, c.kind, c.suffix))
					// The extender is a native sidecar, an init container.
					all := append(template.Spec.InitContainers, template.Spec.Containers...)
					i := slices.IndexFunc(all, func(x corev1.Container) bool { return x.Name == c.container })
					if i < 0 {
						t.Fatalf("no container %s", c.container)
					}
					container := all[i]
					j := slices.IndexFunc(container.Ports, func(p corev1.ContainerPort) bool { return p.Name == "metrics" })
					if j < 0 {
						t.Fatalf("container %s has no port named metrics: %+v", c.container, container.Ports)
					}
					containerPort := container.Ports[j].ContainerPort

					var services []corev1.Service
					for _, o := range find(objs, "Service") {
						var s corev1.Service
						fromUnstructured(t, o, &s)
						if s.Labels["app.kubernetes.io/component"] == component &&
							labels.SelectorFromSet(s.Spec.Selector).Matches(labels.Set(template.Labels)) &&
							slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool {
								return p.Name == "metrics" && p.TargetPort == intstr.FromString("metrics")
							}) {
							services = append(services, s)
						}
					}
					if len(services) != 1 {
						t.Fatalf("%d Services select the %s pods on their metrics port, want 1", len(services), component)
					}
					for _, m := range monitors {
						values, _, _ := unstructured.NestedSlice(m.Object, "spec", "selector", "matchExpressions")
						var selected bool
						for _, e := range values {
							e := e.(map[string]any)
							selected = selected || e["key"] == "app.kubernetes.io/component" && slices.Contains(e["values"].([]any), any(component))
						}
						instance, _, _ := unstructured.NestedString(m.Object, "spec", "selector", "matchLabels", "app.kubernetes.io/instance")
						if !selected || services[0].Labels["app.kubernetes.io/instance"] != instance {
							t.Errorf("ServiceMonitor %s does not select Service %s", m.GetName(), services[0].Name)
						}
					}

					if pluginMode {
						// kube-scheduler's probes ask its secure port, whose
						// /readyz knows its own informers too; the plugin's
						// address is in its arguments.
						host, port := pluginMetricsAddress(t, objs)
						if host != "" || int32(port) != containerPort {
							t.Errorf("the plugin's metricsAddress listens on %q port %d, want every address on the container port %d", host, port, containerPort)
						}
						return
					}
					for probeName, p := range map[string]*corev1.Probe{"readiness": container.ReadinessProbe, "liveness": container.LivenessProbe} {
						if p == nil || p.HTTPGet == nil || p.HTTPGet.Port != intstr.FromString("metrics") {
							t.Errorf("the %s probe of %s is %+v, want an HTTP GET on the metrics port", probeName, c.container, p)
						}
					}
					if component == "device-plugin" {
						// Its address is in its configuration file. Its own
						// default is loopback, which Prometheus could not
						// reach.
						var cm corev1.ConfigMap
						fromUnstructured(t, findOne(t, objs, "ConfigMap", "-device-plugin"), &cm)
						if want := fmt.Sprintf("metricsAddress: \":%d\"\n", containerPort); !strings.Contains(cm.Data["config.yaml"], want) {
							t.Errorf("the device plugin's configuration lacks %q, every address on the container port:\n%s", want, cm.Data["config.yaml"])
						}
						return
					}
					host, port := flagPort(t, container.Command, "metrics-address")
					if host != "" || int32(port) != containerPort {
						t.Errorf("--metrics-address listens on %q port %d, want every address on the container port %d", host, port, containerPort)
					}
				})
			}

			// The extender's verbs stay on loopback, with no port a Service
			// could name.
			template := podTemplate(t, findOne(t, objs, "Deployment", "-scheduler"))
			for _, c := range append(template.Spec.InitContainers, template.Spec.Containers...) {
				if c.Name != "extender" {
					continue
				}
				host, port := flagPort(t, c.Command, "listen-address")
				if host != "127.0.0.1" {
					t.Errorf("the extender listens on %q, want 127.0.0.1 only", host)
				}
				if slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool { return int(p.ContainerPort) == port }) {
					t.Errorf("the extender's port %d is a container port", port)
				}
			}
		})
	}
}
