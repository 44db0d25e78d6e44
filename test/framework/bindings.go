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
	"k8s.io/utils/ptr"
)

// refuseBindingsPolicy names the admission policy and its binding that
// RefuseBindings creates.
const refuseBindingsPolicy = "refuse-bindings"

// RefuseBindings makes the API server refuse the binding of every pod
// whose name starts with prefix, as an admission policy or a node going
// away would, and waits until it does. The returned function lifts the
// refusal.
func (cp *ControlPlane) RefuseBindings(ctx context.Context, t testing.TB, prefix string) (allow func()) {
	t.Helper()
	admission := cp.Kube.AdmissionregistrationV1()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: refuseBindingsPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/binding"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{
				Expression: "!object.metadata.name.startsWith('" + prefix + "')",
				Message:    "bindings of pods named " + prefix + "* are refused",
			}},
		},
	}
	if _, err := admission.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: refuseBindingsPolicy},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := admission.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Admission decides before the pod is looked up: a binding of no pod
	// is refused once the policy is in force, and not found before.
	WaitFor(t, 30*time.Second, "the API server to refuse bindings of "+prefix+"*", func() (bool, string) {
		err := cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: prefix + "no-such-pod", Namespace: metav1.NamespaceDefault},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "no-such-node"},
		}, metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), "are refused"), fmt.Sprint(err)
	})
	return func() {
		t.Helper()
		if err := admission.ValidatingAdmissionPolicyBindings().Delete(ctx, refuseBindingsPolicy, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := admission.ValidatingAdmissionPolicies().Delete(ctx, refuseBindingsPolicy, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}
