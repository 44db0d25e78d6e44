package framework

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// refusal is an admission policy that RefuseBindings or RefuseUnparking
// creates: the API server refuses the operation on resource unless
// expression holds.
type refusal struct {
	name       string
	operation  admissionregistrationv1.OperationType
	resource   string
	expression string
	message    string
}

// RefuseBindings makes the API server refuse the binding of every pod
// whose name starts with prefix, as an admission policy or a node going
// away would, and waits until it does. The returned function lifts the
// refusal.
func (cp *ControlPlane) RefuseBindings(ctx context.Context, t testing.TB, prefix string) (allow func()) {
	t.Helper()
	r := refusal{
		name:       "refuse-bindings",
		operation:  admissionregistrationv1.Create,
		resource:   "pods/binding",
		expression: "!object.metadata.name.startsWith('" + prefix + "')",
		message:    "bindings of pods named " + prefix + "* are refused",
	}
	// Admission decides before the pod is looked up: a binding of no pod
	// is refused once the policy is in force, and not found before.
	return cp.refuse(ctx, t, r, func() error {
		return cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: prefix + "no-such-pod", Namespace: metav1.NamespaceDefault},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "no-such-node"},
		}, metav1.CreateOptions{})
	})
}

// RefuseUnparking makes the API server refuse taking the parked label off
// the pod, which must carry it, as an admission policy that guards the
// label from the scheduler's user would, and waits until it does. The
// returned function lifts the refusal.
func (cp *ControlPlane) RefuseUnparking(ctx context.Context, t testing.TB, namespace, pod string) (allow func()) {
	t.Helper()
	label := "'" + gpuv1alpha1.ParkedLabel + "'"
	r := refusal{
		name:      "refuse-unparking",
		operation: admissionregistrationv1.Update,
		resource:  "pods",
		expression: "object.metadata.name != '" + pod + "' || !has(oldObject.metadata.labels) || !(" + label + " in oldObject.metadata.labels) || " +
			"(has(object.metadata.labels) && " + label + " in object.metadata.labels)",
		message: "the parked label stays on " + pod,
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, gpuv1alpha1.ParkedLabel)
	return cp.refuse(ctx, t, r, func() error {
		_, err := cp.Kube.CoreV1().Pods(namespace).Patch(ctx, pod, types.StrategicMergePatchType, []byte(patch),
			metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	})
}

// refuse creates the refusal's policy and its binding, waits until probe
// is refused with its message, and returns how to lift it.
func (cp *ControlPlane) refuse(ctx context.Context, t testing.TB, r refusal, probe func() error) (allow func()) {
	t.Helper()
	admission := cp.Kube.AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: r.name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{r.operation},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{r.resource}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: r.expression, Message: r.message}},
		},
	}
	if _, err := admission.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: r.name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := admission.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	WaitFor(t, 30*time.Second, "the API server to refuse: "+r.message, func() (bool, string) {
		err := probe()
		return err != nil && strings.Contains(err.Error(), r.message), fmt.Sprint(err)
	})
	return func() {
		t.Helper()
		if err := admission.ValidatingAdmissionPolicyBindings().Delete(ctx, r.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := admission.ValidatingAdmissionPolicies().Delete(ctx, r.name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
