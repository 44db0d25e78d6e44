package helm

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// writeVerbs are the verbs that change state or widen access.
var writeVerbs = []string{"create", "update", "patch", "delete", "deletecollection", "escalate", "bind", "impersonate", "*"}

// grant is one rendered rule that reaches a service account.
type grant struct {
	role string
	rule rbacv1.PolicyRule
}

// access is what the chart grants one service account: the rules of the
// rendered roles bound to it, and the names of the roles it binds that the
// chart does not render (the cluster's built-in ones).
type access struct {
	grants   []grant
	external []string
}

// accessOf follows every rendered binding whose subject is the service
// account to the roles it names.
func accessOf(t testing.TB, objs []*unstructured.Unstructured, namespace, serviceAccount string) access {
	t.Helper()
	roles := map[string]*rbacv1.ClusterRole{} // "Kind/namespace/name"; a Role's rules are copied in
	for _, o := range objs {
		switch o.GetKind() {
		case "ClusterRole":
			var r rbacv1.ClusterRole
			fromUnstructured(t, o, &r)
			roles["ClusterRole//"+r.Name] = &r
		case "Role":
			var r rbacv1.Role
			fromUnstructured(t, o, &r)
			roles["Role/"+r.Namespace+"/"+r.Name] = &rbacv1.ClusterRole{Rules: r.Rules}
		}
	}
	var a access
	for _, o := range objs {
		var subjects []rbacv1.Subject
		var ref rbacv1.RoleRef
		bindingNamespace := ""
		switch o.GetKind() {
		case "ClusterRoleBinding":
			var b rbacv1.ClusterRoleBinding
			fromUnstructured(t, o, &b)
			subjects, ref = b.Subjects, b.RoleRef
		case "RoleBinding":
			var b rbacv1.RoleBinding
			fromUnstructured(t, o, &b)
			subjects, ref, bindingNamespace = b.Subjects, b.RoleRef, b.Namespace
		default:
			continue
		}
		if !slices.ContainsFunc(subjects, func(s rbacv1.Subject) bool {
			return s.Kind == rbacv1.ServiceAccountKind && s.Name == serviceAccount && s.Namespace == namespace
		}) {
			continue
		}
		key := ref.Kind + "//" + ref.Name
		if ref.Kind == "Role" {
			key = "Role/" + bindingNamespace + "/" + ref.Name
		}
		role, ok := roles[key]
		if !ok {
			a.external = append(a.external, ref.Name)
			continue
		}
		for _, rule := range role.Rules {
			a.grants = append(a.grants, grant{role: key, rule: rule})
		}
	}
	sort.Strings(a.external)
	return a
}

func fromUnstructured(t testing.TB, o *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, into, true); err != nil {
		t.Fatalf("decoding %s %s: %v", o.GetKind(), o.GetName(), err)
	}
}

// writes lists "group/resource verb" for every write the grants allow,
// with the resource names a rule is limited to.
func (a access) writes() []string {
	var out []string
	for _, g := range a.grants {
		for _, verb := range g.rule.Verbs {
			if !slices.Contains(writeVerbs, verb) {
				continue
			}
			for _, group := range g.rule.APIGroups {
				for _, resource := range g.rule.Resources {
					w := fmt.Sprintf("%s/%s %s", group, resource, verb)
					if len(g.rule.ResourceNames) > 0 {
						w += " " + strings.Join(g.rule.ResourceNames, ",")
					}
					out = append(out, w)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// allows reports whether some grant allows verb on group/resource.
func (a access) allows(group, resource, verb string) bool {
	for _, g := range a.grants {
		if slices.Contains(g.rule.APIGroups, group) && slices.Contains(g.rule.Resources, resource) && slices.Contains(g.rule.Verbs, verb) {
			return true
		}
	}
	return false
}

// serviceAccountOf returns the service account of the rendered workload.
func serviceAccountOf(t testing.TB, objs []*unstructured.Unstructured, kind, suffix string) string {
	t.Helper()
	w := findOne(t, objs, kind, suffix)
	sa, _, _ := unstructured.NestedString(w.Object, "spec", "template", "spec", "serviceAccountName")
	if sa == "" {
		t.Fatalf("%s %s runs under no named service account", kind, w.GetName())
	}
	return sa
}

func TestRBAC(t *testing.T) {
	for name, v := range variants() {
		t.Run(name, func(t *testing.T) {
			objs := v.mustTemplate(t)
			ns := v.namespace

			t.Run("no cluster-admin and no wildcards", func(t *testing.T) {
				for _, o := range objs {
					if o.GetKind() == "ClusterRoleBinding" || o.GetKind() == "RoleBinding" {
						ref, _, _ := unstructured.NestedString(o.Object, "roleRef", "name")
						if ref == "cluster-admin" || ref == "admin" || ref == "edit" {
							t.Errorf("%s %s binds %s", o.GetKind(), o.GetName(), ref)
						}
					}
					if o.GetKind() == "ClusterRole" || o.GetKind() == "Role" {
						var r rbacv1.ClusterRole
						fromUnstructured(t, o, &r)
						for _, rule := range r.Rules {
							if slices.Contains(rule.Verbs, "*") || slices.Contains(rule.Resources, "*") || slices.Contains(rule.APIGroups, "*") || len(rule.NonResourceURLs) > 0 {
								t.Errorf("%s %s has a wildcard or non-resource rule: %+v", o.GetKind(), o.GetName(), rule)
							}
						}
					}
				}
			})

			t.Run("device plugin writes only GPUNode, GPUAllocation status and Leases of the nodes' namespace", func(t *testing.T) {
				a := accessOf(t, objs, ns, serviceAccountOf(t, objs, "DaemonSet", "-device-plugin"))
				if len(a.external) > 0 {
					t.Errorf("the device plugin is bound to roles the chart does not define: %v", a.external)
				}
				allowed := map[string]bool{"gpu.tessera.dev/gpunodes": true, "gpu.tessera.dev/gpunodes/status": true, "gpu.tessera.dev/gpuallocations/status": true,
					"coordination.k8s.io/leases": true}
				dra := v.draNodes()
				if dra {
					// Its node's ResourceSlice, in DRA mode only.
					allowed["resource.k8s.io/resourceslices"] = true
				}
				// The scheduler's leader-election Lease must be out of its
				// reach by RBAC alone, the own-node policy (which may be
				// off) aside: its Leases have a namespace of their own.
				election, _ := schedulerConfig(t, objs)["leaderElection"].(map[string]any)
				if election["resourceNamespace"] == gpuv1alpha1.DefaultNodeLeaseNamespace {
					t.Errorf("the scheduler's leader-election Lease is in the nodes' Lease namespace %s", gpuv1alpha1.DefaultNodeLeaseNamespace)
				}
				for _, g := range a.grants {
					if slices.Contains(g.rule.Resources, "leases") &&
						(!strings.HasPrefix(g.role, "Role/"+gpuv1alpha1.DefaultNodeLeaseNamespace+"/") || !slices.Equal(g.rule.Verbs, []string{"get", "create", "update"})) {
						t.Errorf("the device plugin's Leases: %s grants %v, want get, create and update in namespace %s only", g.role, g.rule.Verbs, gpuv1alpha1.DefaultNodeLeaseNamespace)
					}
				}
				for _, w := range a.writes() {
					if !allowed[strings.Fields(w)[0]] {
						t.Errorf("the device plugin may %s", w)
					}
				}
				// What it needs, so that an empty role does not pass.
				for _, need := range [][3]string{
					{"gpu.tessera.dev", "gpunodes", "create"}, {"gpu.tessera.dev", "gpunodes/status", "patch"},
					{"gpu.tessera.dev", "gpuallocations/status", "update"}, {"gpu.tessera.dev", "gpuallocations", "get"},
					{"gpu.tessera.dev", "gpuallocations", "list"}, {"", "pods", "list"}, {"", "pods", "watch"},
					{"coordination.k8s.io", "leases", "create"}, {"coordination.k8s.io", "leases", "update"},
				} {
					if !a.allows(need[0], need[1], need[2]) {
						t.Errorf("the device plugin may not %s %s/%s, which it needs", need[2], need[0], need[1])
					}
				}
				for _, need := range [][3]string{
					{"resource.k8s.io", "resourceslices", "create"}, {"resource.k8s.io", "resourceslices", "update"},
					{"resource.k8s.io", "resourceslices", "delete"}, {"resource.k8s.io", "resourceslices", "watch"},
					{"resource.k8s.io", "resourceclaims", "get"},
				} {
					if got := a.allows(need[0], need[1], need[2]); got != dra {
						t.Errorf("the device plugin may %s %s/%s: %v, want %v (DRA mode only)", need[2], need[0], need[1], got, dra)
					}
				}
				// Its cost must not follow the cluster's claims or
				// allocations.
				for _, verb := range []string{"list", "watch"} {
					if a.allows("resource.k8s.io", "resourceclaims", verb) {
						t.Errorf("the device plugin may %s every ResourceClaim", verb)
					}
				}
				if a.allows("gpu.tessera.dev", "gpuallocations", "watch") {
					t.Error("the device plugin may watch GPUAllocations: every allocation event would cost the API server a check per node")
				}
			})

			t.Run("scheduler pod writes only allocations, bindings, events, pod patches and its lease", func(t *testing.T) {
				a := accessOf(t, objs, ns, serviceAccountOf(t, objs, "Deployment", "-scheduler"))
				wantExternal := []string{"extension-apiserver-authentication-reader", "system:kube-scheduler", "system:volume-scheduler"}
				if !slices.Equal(a.external, wantExternal) {
					t.Errorf("the scheduler is bound to built-in roles %v, want %v", a.external, wantExternal)
				}
				allowed := map[string]bool{
					"gpu.tessera.dev/gpuallocations create": true, "gpu.tessera.dev/gpuallocations delete": true,
					"gpu.tessera.dev/gpuallocations/status update": true, "/pods/binding create": true,
					"events.k8s.io/events create": true, "events.k8s.io/events patch": true,
					// Each node's free GPU memory, and the stale mark on a
					// GPUNode's Ready condition, through the status subresource.
					"gpu.tessera.dev/gpunodes/status patch": true,
					// The requeue annotation; not update, which could rewrite a whole pod.
					"/pods patch": true,
				}
				for _, w := range a.writes() {
					fields := strings.Fields(w)
					if fields[0] == "coordination.k8s.io/leases" && len(fields) == 3 && fields[2] == findOne(t, objs, "Deployment", "-scheduler").GetName() {
						continue // its own lease, by name
					}
					if !allowed[fields[0]+" "+fields[1]] || len(fields) > 2 {
						t.Errorf("the scheduler pod may %s", w)
					}
				}
				for _, need := range [][3]string{
					{"gpu.tessera.dev", "gpuallocations", "create"}, {"", "pods/binding", "create"},
					{"gpu.tessera.dev", "gpunodes", "watch"}, {"", "pods", "watch"}, {"", "pods", "patch"},
					{"coordination.k8s.io", "leases", "watch"}, {"gpu.tessera.dev", "gpunodes/status", "patch"},
					// The namespaces' GPU quotas: its view is not ready
					// until their informer has listed them.
					{"", "resourcequotas", "list"}, {"", "resourcequotas", "watch"},
				} {
					if !a.allows(need[0], need[1], need[2]) {
						t.Errorf("the extender may not %s %s/%s, which it needs", need[2], need[0], need[1])
					}
				}
			})

			t.Run("webhook writes only its own configurations and Secret, and claim templates", func(t *testing.T) {
				a := accessOf(t, objs, ns, serviceAccountOf(t, objs, "Deployment", "-webhook"))
				if len(a.external) > 0 {
					t.Errorf("the webhook is bound to roles the chart does not define: %v", a.external)
				}
				mutating := findOne(t, objs, "MutatingWebhookConfiguration", "").GetName()
				validating := findOne(t, objs, "ValidatingWebhookConfiguration", "").GetName()
				for _, w := range a.writes() {
					fields := strings.Fields(w)
					switch {
					case fields[0] == "admissionregistration.k8s.io/mutatingwebhookconfigurations" && len(fields) == 3 && fields[2] == mutating:
					case fields[0] == "admissionregistration.k8s.io/validatingwebhookconfigurations" && len(fields) == 3 && fields[2] == validating:
					case fields[0] == "/secrets" && fields[1] == "create" && len(fields) == 2:
					case fields[0] == "/secrets" && len(fields) == 3 && !strings.Contains(fields[2], ","):
					// In DRA mode it creates the templates of its pods' claims.
					case fields[0] == "resource.k8s.io/resourceclaimtemplates" && fields[1] == "create" && len(fields) == 2:
					default:
						t.Errorf("the webhook may %s", w)
					}
				}
				for _, verb := range []string{"get", "list", "watch", "create"} {
					if !a.allows("resource.k8s.io", "resourceclaimtemplates", verb) {
						t.Errorf("the webhook may not %s ResourceClaimTemplates, which it needs in DRA mode (its informer lists and watches them)", verb)
					}
				}
			})
		})
	}
}
