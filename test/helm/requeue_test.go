package helm

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/requeue"
	"github.com/tessera-gpu/tessera/test/framework"
)

// checkRequeuePolicy checks that the installed ValidatingAdmissionPolicy
// lets the scheduler's service account, which RBAC lets patch any pod,
// change only the requeue annotation, as scheduler/requeue writes it, and
// the parked label, as tessera-scheduler's fit gate writes it, and remove
// only the fit gate the webhook puts on pods in extender mode.
func checkRequeuePolicy(ctx context.Context, t *testing.T, cp *framework.ControlPlane, namespace, serviceAccount string) {
	config := rest.CopyConfig(cp.Config)
	config.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + namespace + ":" + serviceAccount,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
	}
	scheduler, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	createNamespace(ctx, t, cp, "requeue")
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "turned-away", Namespace: "requeue", Labels: map[string]string{"app": "train"}, Annotations: map[string]string{"team": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "registry.example/app:1"}}},
	}
	if _, err := cp.Kube.CoreV1().Pods("requeue").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	patch := func(body string) error {
		_, err := scheduler.CoreV1().Pods("requeue").Patch(ctx, "turned-away", types.MergePatchType, []byte(body), metav1.PatchOptions{FieldManager: "tessera-scheduler-extender"})
		return err
	}

	// The API server loads a new policy a moment after it is created;
	// until then a patch it should refuse goes through and is undone here.
	const relabel = `{"metadata":{"labels":{"app":"mine"}}}`
	var refusal error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if refusal = patch(relabel); refusal == nil {
			_, err := cp.Kube.CoreV1().Pods("requeue").Patch(ctx, "turned-away", types.MergePatchType, []byte(`{"metadata":{"labels":{"app":"train"}}}`), metav1.PatchOptions{})
			return false, err
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the scheduler could still relabel a pod after a minute: %v", err)
	}
	if !strings.Contains(refusal.Error(), "may change only the annotation tessera.dev/gpus-freed-at and the label gpu.tessera.dev/parked of a pod") {
		t.Errorf("relabelling a pod was refused with %q, want the policy's message", refusal)
	}

	tests := []struct {
		name    string
		patch   string
		allowed bool
	}{
		{"the requeue annotation, as scheduler/requeue sets it", `{"metadata":{"annotations":{"` + requeue.Annotation + `":"` + time.Now().UTC().Format(time.RFC3339Nano) + `"}}}`, true},
		{"the requeue annotation again", `{"metadata":{"annotations":{"` + requeue.Annotation + `":"later"}}}`, true},
		{"another annotation", `{"metadata":{"annotations":{"team":"b"}}}`, false},
		{"a new annotation beside the requeue one", `{"metadata":{"annotations":{"` + requeue.Annotation + `":"x","extra":"y"}}}`, false},
		{"removing an annotation", `{"metadata":{"annotations":{"team":null}}}`, false},
		{"a label", relabel, false},
		{"the parked label, as the fit gate parks a pod", `{"metadata":{"labels":{"` + gpuv1alpha1.ParkedLabel + `":"true"}}}`, true},
		{"the parked label taken off", `{"metadata":{"labels":{"` + gpuv1alpha1.ParkedLabel + `":null}}}`, true},
		{"a new label beside the parked one", `{"metadata":{"labels":{"` + gpuv1alpha1.ParkedLabel + `":"true","extra":"y"}}}`, false},
		{"a finalizer", `{"metadata":{"finalizers":["example.com/hold"]}}`, false},
		{"the spec", `{"spec":{"activeDeadlineSeconds":5}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := patch(tt.patch)
			if (err == nil) != tt.allowed {
				t.Errorf("patch %s: %v, want allowed=%v", tt.patch, err, tt.allowed)
			}
		})
	}
	checkFitGatePolicy(ctx, t, scheduler, cp)
}

// checkFitGatePolicy checks, after checkRequeuePolicy has seen the policy
// loaded, that the scheduler may take the fit gate off a pod, as the
// extender does, and change nothing else of its spec with it.
func checkFitGatePolicy(ctx context.Context, t *testing.T, scheduler kubernetes.Interface, cp *framework.ControlPlane) {
	const liftFit = `{"op":"remove","path":"/spec/schedulingGates/1"}`
	tests := []struct {
		name    string
		gates   []string
		patch   string
		allowed bool
	}{
		{"the fit gate, after another", []string{"example.com/quota", gpuv1alpha1.FitSchedulingGate}, liftFit, true},
		{"the fit gate alone", []string{gpuv1alpha1.FitSchedulingGate}, `{"op":"remove","path":"/spec/schedulingGates/0"}`, true},
		{"another gate", []string{"example.com/quota", gpuv1alpha1.FitSchedulingGate}, `{"op":"remove","path":"/spec/schedulingGates/0"}`, false},
		{"every gate", []string{"example.com/quota", gpuv1alpha1.FitSchedulingGate}, `{"op":"remove","path":"/spec/schedulingGates"}`, false},
		{"the fit gate and an image", []string{"example.com/quota", gpuv1alpha1.FitSchedulingGate},
			liftFit + `,{"op":"replace","path":"/spec/containers/0/image","value":"registry.example/app:2"}`, false},
		{"the fit gate and a toleration", []string{"example.com/quota", gpuv1alpha1.FitSchedulingGate},
			liftFit + `,{"op":"add","path":"/spec/tolerations/-","value":{"key":"example.com/gpu","operator":"Exists"}}`, false},
		{"the fit gate and a node selector", []string{"example.com/quota", gpuv1alpha1.FitSchedulingGate},
			liftFit + `,{"op":"add","path":"/spec/nodeSelector","value":{"example.com/gpu":"a100"}}`, false},
		{"the fit gate and a deadline", []string{"example.com/quota", gpuv1alpha1.FitSchedulingGate},
			liftFit + `,{"op":"add","path":"/spec/activeDeadlineSeconds","value":5}`, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("gated-%d", i), Namespace: "requeue"},
				Spec: corev1.PodSpec{
					Containers:  []corev1.Container{{Name: "main", Image: "registry.example/app:1"}},
					Tolerations: []corev1.Toleration{{Key: "example.com/dedicated", Operator: corev1.TolerationOpExists}},
				},
			}
			for _, g := range tt.gates {
				pod.Spec.SchedulingGates = append(pod.Spec.SchedulingGates, corev1.PodSchedulingGate{Name: g})
			}
			if _, err := cp.Kube.CoreV1().Pods("requeue").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			_, err := scheduler.CoreV1().Pods("requeue").Patch(ctx, pod.Name, types.JSONPatchType, []byte("["+tt.patch+"]"),
				metav1.PatchOptions{FieldManager: "tessera-scheduler-extender"})
			if (err == nil) != tt.allowed {
				t.Fatalf("patch %s: %v, want allowed=%v", tt.patch, err, tt.allowed)
			}
			if err != nil && !strings.Contains(err.Error(), "remove its scheduling gate "+gpuv1alpha1.FitSchedulingGate) {
				t.Errorf("patch %s was refused with %q, want the policy's message", tt.patch, err)
			}
		})
	}
}
