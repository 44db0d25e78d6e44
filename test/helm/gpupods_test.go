package helm

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tessera-gpu/tessera/test/framework"
)

// checkGPUPodsPolicy checks that the installed ValidatingAdmissionPolicy
// refuses a pod that asks for the GPU count but would reach its node
// without Tessera's scheduler, even when the pod skips the webhook.
func checkGPUPodsPolicy(ctx context.Context, t *testing.T, cp *framework.ControlPlane) {
	const namespace = "bypass"
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{"tessera.dev/webhook": "disabled"}}}
	if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := func(name, scheduler, node string, limits corev1.ResourceList) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
			Spec: corev1.PodSpec{SchedulerName: scheduler, NodeName: node, Containers: []corev1.Container{{
				Name: "main", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{Limits: limits},
			}}},
		}
	}
	count := corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}
	create := func(p *corev1.Pod) error {
		_, err := cp.Kube.CoreV1().Pods(namespace).Create(ctx, p, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}

	// The API server loads a new policy a moment after it is created.
	var refusal error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		refusal = create(pod("default-scheduler", "", "", count))
		return refusal != nil, nil
	})
	if err != nil {
		t.Fatalf("a GPU pod for the default scheduler was still admitted after a minute: %v", err)
	}
	if want := "a pod that asks for nvidia.com/gpu must be scheduled by tessera-scheduler, not default-scheduler"; !strings.Contains(refusal.Error(), want) {
		t.Errorf("a GPU pod for the default scheduler was refused with %q, want %q", refusal, want)
	}

	tests := []struct {
		name    string
		pod     *corev1.Pod
		refusal string // empty: admitted
	}{
		{"another scheduler", pod("other", "volcano", "", count), "must be scheduled by tessera-scheduler, not volcano"},
		{"a node set at creation", pod("pinned", "tessera-scheduler", "node-a", count), "may not set spec.nodeName (node-a)"},
		{"Tessera's scheduler", pod("tessera", "tessera-scheduler", "", count), ""},
		{"no GPU count", pod("cpu", "", "node-a", corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}), ""},
	}
	for _, tc := range tests {
		err := create(tc.pod)
		switch {
		case tc.refusal == "" && err != nil:
			t.Errorf("%s: refused with %v, want admitted", tc.name, err)
		case tc.refusal != "" && (err == nil || !strings.Contains(err.Error(), tc.refusal)):
			t.Errorf("%s: got %v, want a refusal saying %q", tc.name, err, tc.refusal)
		}
	}
}
