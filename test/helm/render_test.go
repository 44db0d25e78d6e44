package helm

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/test/framework"
)

const testNamespace = "tessera-system"

func defaults() render {
	return render{release: "tessera", namespace: testNamespace}
}

// schedulerMode is the scheduler.mode the render sets, or the default.
func (r render) schedulerMode() string {
	if s, ok := r.values["scheduler"].(map[string]any); ok {
		if mode, ok := s["mode"].(string); ok {
			return mode
		}
	}
	return "extender"
}

// draNodes reports whether the render's node daemon serves the kubelet
// through DRA (devicePlugin.mode dra).
func (r render) draNodes() bool {
	d, _ := r.values["devicePlugin"].(map[string]any)
	return d["mode"] == "dra"
}

// variants are value sets that exercise the chart's conditional parts; each
// must render, and each is applied to a real API server.
func variants() map[string]render {
	return map[string]render{
		"defaults": defaults(),
		"everything on": {release: "full", namespace: "tessera-full", values: map[string]any{
			"image":            map[string]any{"tag": "v0.2.0-rc.1", "pullPolicy": "Always"},
			"imagePullSecrets": []any{map[string]any{"name": "registry"}},
			"crds":             map[string]any{"keep": false},
			"schedulerName":    "gpu-scheduler",
			"resourceNames": map[string]any{
				"count": "example.com/vgpu", "memory": "example.com/vgpu-memory",
				"memoryPercentage": "example.com/vgpu-memory-percentage", "cores": "example.com/vgpu-cores",
			},
			"scheduler": map[string]any{
				"replicas": 3, "priorityClassName": "system-cluster-critical",
				"nodeSelector": map[string]any{"node-role.kubernetes.io/control-plane": ""},
				"tolerations":  []any{map[string]any{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}},
				"extender": map[string]any{"defaultNodePolicy": "spread", "defaultGPUPolicy": "binpack",
					"bindWaitTimeout": "40s", "httpTimeout": "1m", "heartbeatMaxAge": "1m30s", "allocationMetrics": true},
			},
			"webhook": map[string]any{"replicas": 3, "failurePolicy": "Ignore", "excludedNamespaces": []any{"kube-system", "monitoring"},
				"drainSeconds": 0, "shutdownTimeout": "20s"},
			"devicePlugin": map[string]any{
				"splitCount": 4, "memoryScaling": 1.5, "coreScaling": 2, "libraryPath": "/usr/local/vgpu/libvgpu.so",
				"privileged": true, "runtimeClassName": "nvidia", "heartbeatPeriod": "30s",
				"deviceListStrategy": "cdi", "cdiSpecDir": "/etc/cdi", "driverRoot": "/run/nvidia/driver",
				"hamiCore": map[string]any{"image": "projecthami/hami:v2.6.0"},
				"affinity": map[string]any{"nodeAffinity": map[string]any{"requiredDuringSchedulingIgnoredDuringExecution": map[string]any{
					"nodeSelectorTerms": []any{map[string]any{"matchExpressions": []any{map[string]any{
						"key": "nvidia.com/gpu.product", "operator": "In", "values": []any{"NVIDIA-A100-SXM4-40GB"}}}}}}}},
			},
			"metrics": map[string]any{
				"serviceMonitor": map[string]any{"enabled": true, "labels": map[string]any{"release": "prometheus"}},
				"prometheusRule": map[string]any{"enabled": true, "compatibilityRules": true, "labels": map[string]any{"release": "prometheus"}},
			},
		}},
		"dra": {release: "dra", namespace: "tessera-dra", values: map[string]any{
			"devicePlugin": map[string]any{"mode": "dra", "libraryPath": "/usr/local/vgpu/libvgpu.so"},
		}},
		"plugin mode": {release: "plug", namespace: "tessera-plugin", values: map[string]any{
			"scheduler": map[string]any{"mode": "plugin", "gangs": true},
			"metrics":   map[string]any{"serviceMonitor": map[string]any{"enabled": true}},
		}},
		"dra with tessera-scheduler": {release: "drap", namespace: "tessera-drap", values: map[string]any{
			"devicePlugin": map[string]any{"mode": "dra"},
			"scheduler":    map[string]any{"mode": "plugin", "dra": map[string]any{"schedulerName": "tessera-scheduler-dra"}},
		}},
		"minimal": {release: "min", namespace: "tessera-min", values: map[string]any{
			"crds":         map[string]any{"install": false},
			"scheduler":    map[string]any{"leaderElection": false},
			"webhook":      map[string]any{"replicas": 1, "excludedNamespaces": []any{}},
			"devicePlugin": map[string]any{"restrictToOwnNode": false},
		}},
	}
}

func TestLint(t *testing.T) {
	// --strict turns Helm's warnings, such as a template that renders
	// badly formed YAML under some values, into failures.
	if out, err := helm(t, "lint", "--strict", chartDir()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for name, v := range variants() {
		t.Run(name, func(t *testing.T) {
			if out, err := helm(t, v.args(t, true)...); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
		})
	}
}

func TestVariantsRender(t *testing.T) {
	for name, v := range variants() {
		t.Run(name, func(t *testing.T) {
			objs := v.mustTemplate(t)
			kinds := map[string]int{}
			for _, o := range objs {
				kinds[o.GetKind()]++
			}
			// Every part of Tessera is there, whatever the values.
			for kind, want := range map[string]int{"Deployment": 2, "DaemonSet": 1, "MutatingWebhookConfiguration": 1, "ValidatingWebhookConfiguration": 1} {
				if kinds[kind] != want {
					t.Errorf("%d %s rendered, want %d", kinds[kind], kind, want)
				}
			}
			wantCRDs := 2
			if crds, _ := v.values["crds"].(map[string]any); crds != nil && crds["install"] == false {
				wantCRDs = 0
			}
			if kinds["CustomResourceDefinition"] != wantCRDs {
				t.Errorf("%d CRDs rendered, want %d", kinds["CustomResourceDefinition"], wantCRDs)
			}
		})
	}
}

// TestValuesRefused pins that a bad value stops `helm template` (and so
// `helm install`) with a message that names the value.
func TestValuesRefused(t *testing.T) {
	tests := []struct {
		name        string
		values      map[string]any
		kubeVersion string
		want        []string
	}{
		{
			name:   "negative scheduler replicas",
			values: map[string]any{"scheduler": map[string]any{"replicas": -1}},
			want:   []string{"/scheduler/replicas", "minimum"},
		},
		{
			// An extender never hears of the pod group cycle's undone trial.
			name:   "gangs in extender mode",
			values: map[string]any{"scheduler": map[string]any{"gangs": true}},
			want:   []string{"scheduler.gangs needs scheduler.mode plugin", "Unreserve"},
		},
		{
			name:   "negative webhook replicas",
			values: map[string]any{"webhook": map[string]any{"replicas": -2}},
			want:   []string{"/webhook/replicas", "minimum"},
		},
		{
			name:   "unknown node policy",
			values: map[string]any{"scheduler": map[string]any{"extender": map[string]any{"defaultNodePolicy": "pack"}}},
			want:   []string{"/scheduler/extender/defaultNodePolicy", "binpack", "spread"},
		},
		{
			name:   "unknown GPU policy",
			values: map[string]any{"scheduler": map[string]any{"extender": map[string]any{"defaultGPUPolicy": "random"}}},
			want:   []string{"/scheduler/extender/defaultGPUPolicy", "binpack", "spread"},
		},
		{
			// The device plugins could write the scheduler's leader-election Lease.
			name:   "node Leases in the release namespace",
			values: map[string]any{"nodeLeases": map[string]any{"namespace": testNamespace}},
			want:   []string{"nodeLeases.namespace must differ from the release namespace " + testNamespace},
		},
		{
			name:   "split count below 1",
			values: map[string]any{"devicePlugin": map[string]any{"splitCount": 0}},
			want:   []string{"/devicePlugin/splitCount", "minimum"},
		},
		{
			name:   "split count above the API's share limit",
			values: map[string]any{"devicePlugin": map[string]any{"splitCount": 2000}},
			want:   []string{"/devicePlugin/splitCount", "maximum"},
		},
		{
			name:   "zero memory scaling",
			values: map[string]any{"devicePlugin": map[string]any{"memoryScaling": 0}},
			want:   []string{"/devicePlugin/memoryScaling"},
		},
		{
			name:   "misspelt key",
			values: map[string]any{"devicePlugin": map[string]any{"splitcount": 4}},
			want:   []string{"/devicePlugin", "splitcount"},
		},
		{
			name:   "unknown failure policy",
			values: map[string]any{"webhook": map[string]any{"failurePolicy": "Never"}},
			want:   []string{"/webhook/failurePolicy", "Fail", "Ignore"},
		},
		{
			name:   "webhook timeout above the API server's limit",
			values: map[string]any{"webhook": map[string]any{"timeoutSeconds": 31}},
			want:   []string{"/webhook/timeoutSeconds", "maximum"},
		},
		{
			name:   "duration without a unit",
			values: map[string]any{"scheduler": map[string]any{"extender": map[string]any{"httpTimeout": "30"}}},
			want:   []string{"/scheduler/extender/httpTimeout"},
		},
		{
			name:   "resource name without a domain",
			values: map[string]any{"resourceNames": map[string]any{"cores": "gpucores"}},
			want:   []string{"/resourceNames/cores", "gpucores"},
		},
		{
			name:   "relative library path",
			values: map[string]any{"devicePlugin": map[string]any{"libraryPath": "vgpu/libvgpu.so"}},
			want:   []string{"/devicePlugin/libraryPath"},
		},
		{
			name:   "unknown device-list strategy",
			values: map[string]any{"devicePlugin": map[string]any{"deviceListStrategy": "mounts"}},
			want:   []string{"/devicePlugin/deviceListStrategy", "volume-mounts"},
		},
		{
			name:   "unknown HAMi-core policy",
			values: map[string]any{"scheduler": map[string]any{"extender": map[string]any{"hamiCoreMissing": "Ignore"}}},
			want:   []string{"/scheduler/extender/hamiCoreMissing", "Refuse", "Warn"},
		},
		{
			name:   "cdi without the driver root",
			values: map[string]any{"devicePlugin": map[string]any{"deviceListStrategy": "cdi"}},
			want:   []string{"devicePlugin.deviceListStrategy cdi needs devicePlugin.driverRoot"},
		},
		{
			name:   "unknown mode",
			values: map[string]any{"devicePlugin": map[string]any{"mode": "extender"}},
			want:   []string{"/devicePlugin/mode", "device-plugin", "dra"},
		},
		{
			name:   "port out of range",
			values: map[string]any{"devicePlugin": map[string]any{"metricsPort": 70000}},
			want:   []string{"/devicePlugin/metricsPort", "maximum"},
		},
		{
			name:   "replicas without leader election",
			values: map[string]any{"scheduler": map[string]any{"replicas": 2, "leaderElection": false}},
			want:   []string{"scheduler.replicas is 2", "scheduler.leaderElection"},
		},
		{
			name:   "bind wait not shorter than the extender timeout",
			values: map[string]any{"scheduler": map[string]any{"extender": map[string]any{"bindWaitTimeout": "1m", "httpTimeout": "45s"}}},
			want:   []string{"scheduler.extender.bindWaitTimeout 1m", "scheduler.extender.httpTimeout 45s"},
		},
		{
			name:   "heartbeat age below two periods",
			values: map[string]any{"scheduler": map[string]any{"extender": map[string]any{"heartbeatMaxAge": "20s"}}},
			want:   []string{"scheduler.extender.heartbeatMaxAge 20s", "devicePlugin.heartbeatPeriod 15s"},
		},
		{
			name:   "rescan period below a second",
			values: map[string]any{"devicePlugin": map[string]any{"rescanPeriod": "500ms"}},
			want:   []string{"devicePlugin.rescanPeriod 500ms must be at least 1s"},
		},
		{
			name: "gang-fit in DRA mode",
			values: map[string]any{"devicePlugin": map[string]any{"mode": "dra"},
				"scheduler": map[string]any{"extender": map[string]any{"gangFit": map[string]any{"enabled": true}}}},
			want: []string{"gangFit.enabled does not work with devicePlugin.mode dra"},
		},
		{
			name:   "a DRA profile in extender mode",
			values: map[string]any{"scheduler": map[string]any{"dra": map[string]any{"schedulerName": "tessera-scheduler-dra"}}},
			want:   []string{"scheduler.dra.schedulerName needs scheduler.mode plugin"},
		},
		{
			name:   "a DRA profile named as the other",
			values: map[string]any{"scheduler": map[string]any{"mode": "plugin", "dra": map[string]any{"schedulerName": "tessera-scheduler"}}},
			want:   []string{"scheduler.dra.schedulerName tessera-scheduler must differ from schedulerName"},
		},
		{
			name:   "a DRA profile name that is no name",
			values: map[string]any{"scheduler": map[string]any{"mode": "plugin", "dra": map[string]any{"schedulerName": "Tessera DRA"}}},
			want:   []string{"/scheduler/dra/schedulerName"},
		},
		{
			name:   "one resource name twice",
			values: map[string]any{"resourceNames": map[string]any{"memory": "nvidia.com/gpu"}},
			want:   []string{"resourceNames must be four different names"},
		},
		{
			name:   "negative webhook drain",
			values: map[string]any{"webhook": map[string]any{"drainSeconds": -1}},
			want:   []string{"/webhook/drainSeconds", "minimum"},
		},
		{
			name:   "webhook shutdown timeout without a unit",
			values: map[string]any{"webhook": map[string]any{"shutdownTimeout": "10"}},
			want:   []string{"/webhook/shutdownTimeout"},
		},
		{
			name:   "allocation metrics not a boolean",
			values: map[string]any{"scheduler": map[string]any{"extender": map[string]any{"allocationMetrics": "yes"}}},
			want:   []string{"/scheduler/extender/allocationMetrics", "boolean"},
		},
		{
			name:   "misspelt PrometheusRule key",
			values: map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "compatibility": true}}},
			want:   []string{"/metrics/prometheusRule", "compatibility"},
		},
		{
			name:   "certificate warning without a unit",
			values: map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "certificateExpiryWarning": "7"}}},
			want:   []string{"/metrics/prometheusRule/certificateExpiryWarning"},
		},
		{
			// It would fire for every namespace with a quota.
			name:   "quota warning at no use",
			values: map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "quotaWarning": map[string]any{"threshold": 0, "for": "15m"}}}},
			want:   []string{"/metrics/prometheusRule/quotaWarning/threshold"},
		},
		{
			// 90 meant as percent.
			name:   "quota warning in percent",
			values: map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "quotaWarning": map[string]any{"threshold": 90, "for": "15m"}}}},
			want:   []string{"/metrics/prometheusRule/quotaWarning/threshold", "maximum"},
		},
		{
			name:   "quota warning for no unit",
			values: map[string]any{"metrics": map[string]any{"prometheusRule": map[string]any{"enabled": true, "quotaWarning": map[string]any{"threshold": 0.9, "for": "15"}}}},
			want:   []string{"/metrics/prometheusRule/quotaWarning/for"},
		},
		{
			name:        "kube-scheduler newer than the cluster",
			kubeVersion: "1.36.3",
			want:        []string{"scheduler.kubeScheduler.image.tag v1.37.2", "v1.36.3"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := defaults()
			r.values, r.kubeVersion = tt.values, tt.kubeVersion
			_, err := r.template(t)
			if err == nil {
				t.Fatalf("the chart rendered with %v, want an error", tt.values)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not mention %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestCRDCopiesMatchDeploy keeps deploy/crds the single source of the
// CRDs: the chart's copies must be the same files, byte for byte.
func TestCRDCopiesMatchDeploy(t *testing.T) {
	source := filepath.Join(framework.RepoRoot(), "deploy", "crds")
	copies := filepath.Join(chartDir(), "files", "crds")
	names := func(dir string) []string {
		files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, f := range files {
			out = append(out, filepath.Base(f))
		}
		sort.Strings(out)
		return out
	}
	want, got := names(source), names(copies)
	fix := "run: rm -f deploy/helm/tessera/files/crds/*.yaml && cp deploy/crds/*.yaml deploy/helm/tessera/files/crds/"
	if len(want) == 0 {
		t.Fatalf("no CRDs in %s", source)
	}
	if !reflect.DeepEqual(want, got) {
		t.Fatalf("the chart holds CRDs %v, deploy/crds holds %v; %s", got, want, fix)
	}
	for _, name := range want {
		a, err := os.ReadFile(filepath.Join(source, name))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(copies, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("the chart's %s differs from deploy/crds/%s; %s", name, name, fix)
		}
	}

	// What the chart installs is those CRDs, plus its labels and the keep
	// annotation.
	objs := defaults().mustTemplate(t)
	for _, crd := range find(objs, "CustomResourceDefinition") {
		if crd.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s lacks helm.sh/resource-policy: keep", crd.GetName())
		}
		spec, _, _ := unstructured.NestedMap(crd.Object, "spec")
		var found bool
		for _, name := range want {
			data, _ := os.ReadFile(filepath.Join(source, name))
			var source map[string]any
			if err := yaml.Unmarshal(data, &source); err != nil {
				t.Fatal(err)
			}
			if source["metadata"].(map[string]any)["name"] == crd.GetName() {
				found = true
				if !reflect.DeepEqual(normalize(t, source["spec"]), normalize(t, spec)) {
					t.Errorf("the rendered CRD %s has a spec other than deploy/crds/%s", crd.GetName(), name)
				}
			}
		}
		if !found {
			t.Errorf("rendered CRD %s is not in deploy/crds", crd.GetName())
		}
	}
}

// TestSchedulerConfigMatchesDeploy checks that the chart's
// KubeSchedulerConfiguration is deploy/scheduler's plus leader election, in
// each scheduler mode.
func TestSchedulerConfigMatchesDeploy(t *testing.T) {
	tests := []struct {
		mode, file string
	}{
		{"extender", "kube-scheduler-config.yaml"},
		{"plugin", "tessera-scheduler-config.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.mode, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "scheduler", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := yaml.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			r := defaults()
			r.values = map[string]any{"scheduler": map[string]any{"mode": tc.mode}}
			got := schedulerConfig(t, r.mustTemplate(t))
			election, ok := got["leaderElection"].(map[string]any)
			if !ok {
				t.Fatalf("the chart's scheduler configuration has no leaderElection: %v", got)
			}
			if election["leaderElect"] != true || election["resourceNamespace"] != testNamespace || election["resourceName"] != "tessera-scheduler" {
				t.Errorf("leaderElection = %v, want leaderElect true on lease %s/tessera-scheduler", election, testNamespace)
			}
			delete(got, "leaderElection")
			if tc.mode == "plugin" {
				// Like kube-scheduler's, gang-fit's Lease is the release's.
				gangFit := tesseraArgs(t, got)["gangFit"].(map[string]any)
				if gangFit["leaseNamespace"] != testNamespace || gangFit["leaseName"] != "tessera-scheduler-gang-fit" {
					t.Errorf("gangFit = %v, want the Lease %s/tessera-scheduler-gang-fit", gangFit, testNamespace)
				}
				delete(gangFit, "leaseNamespace")
				delete(gangFit, "leaseName")
			}
			if !reflect.DeepEqual(normalize(t, got), normalize(t, want)) {
				gotYAML, _ := yaml.Marshal(got)
				t.Errorf("the chart's KubeSchedulerConfiguration differs from deploy/scheduler/%s:\nchart:\n%s\ndeploy:\n%s", tc.file, gotYAML, data)
			}
		})
	}
}

// tesseraArgs returns the args of the Tessera plugin in the first profile
// of a KubeSchedulerConfiguration, in place.
func tesseraArgs(t testing.TB, config map[string]any) map[string]any {
	t.Helper()
	profiles, _ := config["profiles"].([]any)
	if len(profiles) > 0 {
		plugins, _ := profiles[0].(map[string]any)["pluginConfig"].([]any)
		for _, p := range plugins {
			if p := p.(map[string]any); p["name"] == "Tessera" {
				return p["args"].(map[string]any)
			}
		}
	}
	t.Fatalf("no Tessera plugin args in the scheduler configuration: %v", config)
	return nil
}

// schedulerConfig returns the KubeSchedulerConfiguration in the rendered
// scheduler ConfigMap.
func schedulerConfig(t testing.TB, objs []*unstructured.Unstructured) map[string]any {
	t.Helper()
	cm := findOne(t, objs, "ConfigMap", "-scheduler")
	text, _, _ := unstructured.NestedString(cm.Object, "data", "kube-scheduler-config.yaml")
	var config map[string]any
	if err := yaml.Unmarshal([]byte(text), &config); err != nil {
		t.Fatalf("decoding the scheduler configuration: %v\n%s", err, text)
	}
	return config
}

// normalize round-trips a decoded document through JSON, so that numbers
// decoded as int64 and as float64 compare equal.
func normalize(t testing.TB, v any) any {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWebhookConfigurationsMatchDeploy checks that, with the default values
// in namespace tessera-system, the chart registers exactly the webhooks of
// deploy/webhook: same rules, selectors, match conditions and policies.
func TestWebhookConfigurationsMatchDeploy(t *testing.T) {
	objs := defaults().mustTemplate(t)
	for kind, file := range map[string]string{
		"MutatingWebhookConfiguration":   "mutatingwebhookconfiguration.yaml",
		"ValidatingWebhookConfiguration": "validatingwebhookconfiguration.yaml",
	} {
		t.Run(kind, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "deploy", "webhook", file))
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]any
			if err := yaml.Unmarshal(data, &want); err != nil {
				t.Fatal(err)
			}
			got := findOne(t, objs, kind, "")
			if got.GetName() != want["metadata"].(map[string]any)["name"] {
				t.Errorf("the chart names its %s %q, deploy/webhook %q", kind, got.GetName(), want["metadata"].(map[string]any)["name"])
			}
			gotHooks, wantHooks := normalize(t, got.Object["webhooks"]), normalize(t, want["webhooks"])
			squeezeExpressions(gotHooks)
			squeezeExpressions(wantHooks)
			if !reflect.DeepEqual(gotHooks, wantHooks) {
				a, _ := yaml.Marshal(gotHooks)
				b, _ := yaml.Marshal(wantHooks)
				t.Errorf("the chart's webhooks differ from deploy/webhook/%s:\nchart:\n%s\ndeploy:\n%s", file, a, b)
			}
		})
	}
}

// squeezeExpressions drops the white space of CEL expressions, which YAML
// folding places differently in the two files.
func squeezeExpressions(v any) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			if s, ok := x.(string); ok && k == "expression" {
				v[k] = strings.Join(strings.Fields(s), "")
				continue
			}
			squeezeExpressions(x)
		}
	case []any:
		for _, x := range v {
			squeezeExpressions(x)
		}
	}
}
