package helm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

const fieldManager = "tessera-chart-test"

// TestChartOnAPIServer applies what the chart renders to a real
// kube-apiserver (whose CRDs the framework installs from deploy/crds), runs
// the real kube-scheduler on the rendered configuration, and checks the
// installed RBAC, admission policy and webhook selection.
func TestChartOnAPIServer(t *testing.T) {
	cp := framework.Start(t, framework.Options{})
	ctx := context.Background()
	installServiceMonitorStandIn(ctx, t, cp)
	dyn, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	mapper := newMapper(t, cp)

	for name, v := range variants() {
		t.Run("dry-run apply/"+name, func(t *testing.T) {
			createNamespace(ctx, t, cp, v.namespace)
			applied := 0
			for _, obj := range v.mustTemplate(t) {
				apply(ctx, t, dyn, mapper, v.namespace, obj, true)
				applied++
			}
			t.Logf("%d objects accepted by the API server (dry run)", applied)
		})
	}

	t.Run("kube-scheduler accepts the rendered configuration", func(t *testing.T) {
		for name, v := range variants() {
			config, err := yaml.Marshal(schedulerConfig(t, v.mustTemplate(t)))
			if err != nil {
				t.Fatal(err)
			}
			// StartScheduler fails the test if kube-scheduler exits, as it
			// does on a configuration it cannot decode or validate. Plugin
			// mode's configuration is for tessera-scheduler, which the
			// chart runs in its place.
			if v.schedulerMode() == "plugin" {
				bin, err := framework.SchedulerPluginBinary()
				if err != nil {
					t.Fatal(err)
				}
				p := cp.StartSchedulerBinary(t, bin, string(config))
				t.Logf("%s: tessera-scheduler serving with the chart's configuration", name)
				p.Stop()
				continue
			}
			p := cp.StartScheduler(t, string(config))
			t.Logf("%s: kube-scheduler v1.37.2 serving with the chart's configuration", name)
			p.Stop()
		}
	})

	// The default release, installed for real, for the checks below.
	release := defaults()
	objs := install(ctx, t, cp, dyn, mapper, release)

	t.Run("RBAC as the API server decides it", func(t *testing.T) {
		checkAccess(ctx, t, cp, release.namespace, objs)
	})
	t.Run("device plugin writes only its own node", func(t *testing.T) {
		checkOwnNodePolicy(ctx, t, cp, release.namespace, serviceAccountOf(t, objs, "DaemonSet", "-device-plugin"))
	})
	t.Run("the scheduler patches only the requeue annotation and the parked label, and lifts only the fit gate", func(t *testing.T) {
		checkRequeuePolicy(ctx, t, cp, release.namespace, serviceAccountOf(t, objs, "Deployment", "-scheduler"))
	})
	t.Run("only the scheduler parks pods", func(t *testing.T) {
		checkParkedLabelPolicy(ctx, t, cp)
	})
	t.Run("GPU pods reach nodes only through Tessera's scheduler", func(t *testing.T) {
		checkGPUPodsPolicy(ctx, t, cp)
	})
	t.Run("only GPU pods and Jobs are sent to the webhook", func(t *testing.T) {
		checkWebhookSelection(ctx, t, cp, release.namespace)
	})
	t.Run("daemons run with the rendered flags as their service accounts", func(t *testing.T) {
		checkDaemons(ctx, t, cp, release.namespace, objs)
	})
	t.Run("helm install, upgrade and uninstall", func(t *testing.T) {
		checkHelmLifecycle(ctx, t, cp)
	})
}

// checkHelmLifecycle installs, upgrades and uninstalls a release with Helm
// itself, which reads the cluster's version and applies the objects in its
// own order. The CRDs are left out: the framework's already exist, and a
// second owner is what crds.install=false is for.
func checkHelmLifecycle(ctx context.Context, t *testing.T, cp *framework.ControlPlane) {
	const release, namespace = "lifecycle", "tessera-lifecycle"
	kube := []string{"--kubeconfig", cp.KubeconfigPath, "--namespace", namespace}
	out, err := helm(t, append([]string{"install", release, chartDir(), "--create-namespace", "--set", "crds.install=false",
		// The default release's, applied above, is not this release's to create.
		"--set", "nodeLeases.namespace=" + namespace + "-node-lease"}, kube...)...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "kubectl get gpuallocations -A") || !strings.Contains(out, "nothing enforces them") {
		t.Errorf("the install's notes lack the first steps and the missing-library warning:\n%s", out)
	}
	configMap := release + "-tessera-device-plugin"
	if _, err := helm(t, append([]string{"upgrade", release, chartDir(), "--reuse-values", "--set", "devicePlugin.splitCount=4"}, kube...)...); err != nil {
		t.Fatal(err)
	}
	cm, err := cp.Kube.CoreV1().ConfigMaps(namespace).Get(ctx, configMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["config.yaml"], "splitCount: 4\n") {
		t.Errorf("after the upgrade the device plugin's configuration is\n%s\nwant splitCount: 4", cm.Data["config.yaml"])
	}
	if _, err := helm(t, append([]string{"uninstall", release, "--wait"}, kube...)...); err != nil {
		t.Fatal(err)
	}
	role := release + "-tessera-device-plugin"
	if _, err := cp.Kube.RbacV1().ClusterRoles().Get(ctx, role, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ClusterRole %s after uninstall: %v, want it gone", role, err)
	}
}

func newMapper(t testing.TB, cp *framework.ControlPlane) meta.RESTMapper {
	t.Helper()
	dc, err := discovery.NewDiscoveryClientForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	groups, err := restmapper.GetAPIGroupResources(dc)
	if err != nil {
		t.Fatalf("discovering API resources: %v", err)
	}
	return restmapper.NewDiscoveryRESTMapper(groups)
}

func createNamespace(ctx context.Context, t testing.TB, cp *framework.ControlPlane, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
}

// install creates the release's namespace and applies what the chart
// renders for it, the CRDs aside (the framework's, from the same files),
// and returns what it rendered.
func install(ctx context.Context, t testing.TB, cp *framework.ControlPlane, dyn dynamic.Interface, mapper meta.RESTMapper, release render) []*unstructured.Unstructured {
	t.Helper()
	createNamespace(ctx, t, cp, release.namespace)
	objs := release.mustTemplate(t)
	for _, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" {
			continue
		}
		apply(ctx, t, dyn, mapper, release.namespace, obj, false)
	}
	return objs
}

// apply server-side applies one rendered object. A namespaced object must
// name the release namespace itself (or kube-system, where the scheduler's
// authentication-reader binding lives, or the nodes' Lease namespace), since `kubectl apply` of the
// rendered YAML would otherwise put it in the current namespace.
func apply(ctx context.Context, t testing.TB, dyn dynamic.Interface, mapper meta.RESTMapper, namespace string, obj *unstructured.Unstructured, dryRun bool) {
	t.Helper()
	gvk := obj.GroupVersionKind()
	mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Errorf("%s %s: the API server does not serve it: %v", gvk, obj.GetName(), err)
		return
	}
	var client dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if ns := obj.GetNamespace(); ns != namespace && ns != metav1.NamespaceSystem && ns != gpuv1alpha1.DefaultNodeLeaseNamespace {
			t.Errorf("%s %s is in namespace %q, want the release namespace %q", gvk.Kind, obj.GetName(), ns, namespace)
			return
		}
		client = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
	} else if obj.GetNamespace() != "" {
		t.Errorf("cluster-scoped %s %s names namespace %q", gvk.Kind, obj.GetName(), obj.GetNamespace())
	}
	opts := metav1.ApplyOptions{FieldManager: fieldManager, Force: true}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	// Force: the CRDs exist already, created by the framework; taking
	// over their fields is what a first `helm install` does too.
	if _, err := client.Apply(ctx, obj.GetName(), obj, opts); err != nil {
		t.Errorf("applying %s %s: %v", gvk.Kind, obj.GetName(), err)
	}
}

// installServiceMonitorStandIn serves monitoring.coreos.com/v1
// ServiceMonitor and PrometheusRule, so that the optional ones can be
// applied. The Prometheus Operator's own CRDs are not in this module's
// dependencies; these accept any spec, so the test also checks the
// ServiceMonitor's selector and port against the rendered Service
// (TestServiceMonitor).
func installServiceMonitorStandIn(ctx context.Context, t testing.TB, cp *framework.ControlPlane) {
	t.Helper()
	client, err := apiextensionsclient.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	preserve := true
	for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
		lower := strings.ToLower(kind)
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: lower + "s.monitoring.coreos.com"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "monitoring.coreos.com",
				Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: lower + "s", Singular: lower, Kind: kind, ListKind: kind + "List"},
				Scope: apiextensionsv1.NamespaceScoped,
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
					Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object", XPreserveUnknownFields: &preserve,
					}},
				}},
			},
		}
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating the %s stand-in CRD: %v", kind, err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		resources, err := cp.Kube.Discovery().ServerResourcesForGroupVersion("monitoring.coreos.com/v1")
		return err == nil && len(resources.APIResources) >= 2, nil
	})
	if err != nil {
		t.Fatalf("waiting for the monitoring stand-ins to be served: %v", err)
	}
}

// checkAccess asks the API server's authorizer what each Tessera service
// account may do, with the chart's roles installed.
func checkAccess(ctx context.Context, t *testing.T, cp *framework.ControlPlane, namespace string, objs []*unstructured.Unstructured) {
	plugin := serviceAccountOf(t, objs, "DaemonSet", "-device-plugin")
	scheduler := serviceAccountOf(t, objs, "Deployment", "-scheduler")
	webhook := serviceAccountOf(t, objs, "Deployment", "-webhook")
	webhookConfig := findOne(t, objs, "MutatingWebhookConfiguration", "").GetName()
	lease := findOne(t, objs, "Deployment", "-scheduler").GetName()
	const gpu = "gpu.tessera.dev"
	tests := []struct {
		sa                                   string
		verb, group, resource, sub, ns, name string
		allowed                              bool
	}{
		{plugin, "create", gpu, "gpunodes", "", "", "", true},
		{plugin, "patch", gpu, "gpunodes", "status", "", "node-a", true},
		{plugin, "update", gpu, "gpuallocations", "status", "team-a", "job", true},
		{plugin, "get", gpu, "gpuallocations", "", "team-a", "job", true},
		{plugin, "list", gpu, "gpuallocations", "", "", "", true},
		{plugin, "watch", gpu, "gpuallocations", "", "", "", false},
		{plugin, "list", "", "pods", "", "", "", true},
		{plugin, "update", gpu, "gpunodes", "", "", "node-a", false},       // spec is the administrator's
		{plugin, "update", gpu, "gpunodes", "status", "", "node-a", false}, // it applies its status
		{plugin, "patch", gpu, "gpunodes", "", "", "node-a", false},
		{plugin, "delete", gpu, "gpunodes", "", "", "node-a", false},
		{plugin, "create", gpu, "gpuallocations", "", "team-a", "", false},
		{plugin, "delete", gpu, "gpuallocations", "", "team-a", "job", false},
		{plugin, "update", gpu, "gpuallocations", "", "team-a", "job", false},
		{plugin, "create", "", "pods", "", "team-a", "", false},
		{plugin, "patch", "", "nodes", "", "", "node-a", false},
		{plugin, "get", "", "secrets", "", namespace, "", false},
		// Its node's Lease, in the nodes' Lease namespace; never the
		// scheduler's leader-election Lease, whatever the own-node
		// policy (which a SubjectAccessReview does not consult) says.
		{plugin, "create", "coordination.k8s.io", "leases", "", gpuv1alpha1.DefaultNodeLeaseNamespace, "", true},
		{plugin, "update", "coordination.k8s.io", "leases", "", gpuv1alpha1.DefaultNodeLeaseNamespace, "node-a", true},
		{plugin, "update", "coordination.k8s.io", "leases", "", namespace, lease, false},
		{plugin, "delete", "coordination.k8s.io", "leases", "", namespace, lease, false},
		{plugin, "create", "coordination.k8s.io", "leases", "", namespace, "", false},
		{plugin, "delete", "coordination.k8s.io", "leases", "", gpuv1alpha1.DefaultNodeLeaseNamespace, "node-a", false},

		{scheduler, "create", gpu, "gpuallocations", "", "team-a", "", true},
		{scheduler, "delete", gpu, "gpuallocations", "", "team-a", "job", true},
		{scheduler, "update", gpu, "gpuallocations", "status", "team-a", "job", true},
		{scheduler, "create", "", "pods", "binding", "team-a", "job", true},
		{scheduler, "create", "events.k8s.io", "events", "", "team-a", "", true},
		{scheduler, "patch", "", "pods", "", "team-a", "job", true}, // the requeue annotation
		{scheduler, "update", "coordination.k8s.io", "leases", "", namespace, lease, true},
		{scheduler, "watch", "coordination.k8s.io", "leases", "", gpuv1alpha1.DefaultNodeLeaseNamespace, "", true},
		{scheduler, "update", gpu, "gpunodes", "status", "", "node-a", false},
		{scheduler, "patch", gpu, "gpunodes", "", "", "node-a", false},
		{scheduler, "update", "coordination.k8s.io", "leases", "", namespace, "someone-else", false},
		{scheduler, "get", "", "secrets", "", "team-a", "", false},
		{scheduler, "update", "", "pods", "", "team-a", "job", false},
		{scheduler, "create", "", "pods", "", "team-a", "", false},

		{webhook, "list", gpu, "gpunodes", "", "", "", true},
		{webhook, "watch", "", "namespaces", "", "", "", true},
		{webhook, "update", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", webhookConfig, true},
		{webhook, "update", "admissionregistration.k8s.io", "validatingwebhookconfigurations", "", "", webhookConfig, true},
		{webhook, "get", "", "secrets", "", namespace, webhookConfig + "-tls", true},
		{webhook, "create", "", "secrets", "", namespace, "", true},
		{webhook, "update", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "another-webhook", false},
		{webhook, "create", "admissionregistration.k8s.io", "mutatingwebhookconfigurations", "", "", "", false},
		{webhook, "get", "", "secrets", "", namespace, "another-secret", false},
		{webhook, "create", "", "secrets", "", "team-a", "", false},
		{webhook, "update", gpu, "gpunodes", "status", "", "node-a", false},
		{webhook, "create", "", "pods", "", "team-a", "", false},
	}
	for _, tt := range tests {
		resource := tt.resource
		if tt.sub != "" {
			resource += "/" + tt.sub
		}
		want := map[bool]string{true: "may", false: "may not"}[tt.allowed]
		t.Run(fmt.Sprintf("%s %s %s %s", tt.sa, want, tt.verb, resource), func(t *testing.T) {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User:   "system:serviceaccount:" + namespace + ":" + tt.sa,
				Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Verb: tt.verb, Group: tt.group, Resource: tt.resource, Subresource: tt.sub, Namespace: tt.ns, Name: tt.name,
				},
			}}
			got, err := cp.Kube.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Status.Allowed != tt.allowed {
				t.Errorf("allowed = %v, want %v (%s)", got.Status.Allowed, tt.allowed, got.Status.Reason)
			}
		})
	}
}
