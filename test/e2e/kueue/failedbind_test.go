package kueue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/webhook/admission"
)

// testFailedBind has the API server refuse every binding of a gang's pod,
// as an admission policy or a node going away would, while a pod outside
// the gang, of another namespace and controller, that copied the gang's
// annotation asks for the same room: the room stays held for the gang,
// and the gang's pod is placed in it once its binding is allowed. Run it
// after testGangFit, whose Workloads hold the rest of the GPUs.
func testFailedBind(ctx context.Context, t *testing.T, e *env) {
	const node = "gang-bind"
	e.addNode(ctx, t, node, 1)
	refuseBindings(ctx, t, e, "failbind-")

	job := e.submit(ctx, t, gpuJob("gang", "failbind", 1, slice{gpus: 1, memoryMiB: 81920, cores: 10}))
	e.waitAdmitted(t, job, "gang")
	var key string
	framework.WaitFor(t, time.Minute, "the binding of Job failbind's pod to be refused", func() (bool, string) {
		pods, err := e.cp.Kube.CoreV1().Pods("gang").List(ctx, metav1.ListOptions{LabelSelector: batchv1.JobNameLabel + "=failbind"})
		if err != nil || len(pods.Items) == 0 {
			return false, "no pod yet"
		}
		key = pods.Items[0].Annotations[gpuv1alpha1.GangHoldAnnotation]
		for _, c := range pods.Items[0].Status.Conditions {
			if c.Type == corev1.PodScheduled && strings.Contains(c.Message, "failbind-") {
				return true, ""
			}
		}
		return false, "not refused yet"
	})

	// The copier's controller exists, so that the garbage collector
	// leaves the pod be, and the webhook admits a controlled pod.
	owner, err := e.cp.Kube.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "copier"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	other := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "outside-the-gang", Namespace: "default",
			Annotations:     map[string]string{gpuv1alpha1.GangHoldAnnotation: key},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}},
		},
		Spec: corev1.PodSpec{
			SchedulerName:                 admission.DefaultSchedulerName,
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			Containers: []corev1.Container{{Name: "main", Image: "registry.example/x:1", Resources: corev1.ResourceRequirements{
				Limits: slice{gpus: 1, memoryMiB: 81920, cores: 10}.perGPU(),
			}}},
		},
	}
	if _, err := e.cp.Kube.CoreV1().Pods(other.Namespace).Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		p, err := e.cp.Kube.CoreV1().Pods(other.Namespace).Get(ctx, other.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Spec.NodeName != "" {
			t.Fatalf("a pod outside the gang was placed on %s, in the room held for the gang whose pod failed to bind", p.Spec.NodeName)
		}
		time.Sleep(500 * time.Millisecond)
	}

	if err := e.cp.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(ctx, "refuse-bindings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitPlaced(ctx, t, job, node, 1)
	if err := e.cp.Kube.CoreV1().Pods(other.Namespace).Delete(ctx, other.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	if err := e.cp.Kube.CoreV1().ConfigMaps(owner.Namespace).Delete(ctx, owner.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// refuseBindings makes the API server refuse the binding of every pod
// whose name starts with prefix, and waits until it does.
func refuseBindings(ctx context.Context, t *testing.T, e *env, prefix string) {
	t.Helper()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-bindings"},
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
	if _, err := e.cp.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "refuse-bindings"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		},
	}
	if _, err := e.cp.Kube.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Admission decides before the pod is looked up: a binding of no pod
	// is refused once the policy is in force, and not found before.
	framework.WaitFor(t, 30*time.Second, "the API server to refuse bindings of "+prefix+"*", func() (bool, string) {
		err := e.cp.Kube.CoreV1().Pods("default").Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: prefix + "no-such-pod", Namespace: "default"},
			Target:     corev1.ObjectReference{Kind: "Node", Name: "no-such-node"},
		}, metav1.CreateOptions{})
		return err != nil && strings.Contains(err.Error(), "are refused"), fmt.Sprint(err)
	})
}
