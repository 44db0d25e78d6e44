package scheduler

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// testPreferenceBeatsPolicy checks, through the real kube-scheduler with
// the shipped configuration, that a pod's own preferred node affinity
// beats the node policy when exactly two nodes fit, and that the node
// policy still beats kube-scheduler's default spreading of a Service's
// pods, which no pod asked for.
func testPreferenceBeatsPolicy(ctx context.Context, t *testing.T, e *env) {
	const group = "preference"
	e.addNode(ctx, t, "preference-1", group, 10, a100(0), a100(0))
	e.addNode(ctx, t, "preference-2", group, 10, a100(0), a100(0))
	slice := ctr{name: "main", count: 1, memory: 20000}

	e.createPod(ctx, t, gpuPod("pref-first", group, nil, slice))
	first, _ := e.waitBound(ctx, t, "pref-first")
	busier, emptier := first.Spec.NodeName, "preference-1"
	if busier == emptier {
		emptier = "preference-2"
	}

	tests := []struct {
		name        string
		annotations map[string]string
		prefer      string
	}{
		{name: "binpack pod preferring the emptier node", prefer: emptier},
		{name: "spread pod preferring the busier node", prefer: busier,
			annotations: map[string]string{"tessera.dev/node-policy": "spread"}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			name := "pref-" + itoa(i)
			pod := gpuPod(name, group, tc.annotations, slice)
			// The smallest preference there is: one term of weight 1.
			pod.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
					Weight: 1,
					Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{{
						Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{tc.prefer},
					}}},
				}},
			}}
			e.createPod(ctx, t, pod)
			if got, _ := e.waitBound(ctx, t, name); got.Spec.NodeName != tc.prefer {
				t.Errorf("pod went to %s, want the node it prefers, %s", got.Spec.NodeName, tc.prefer)
			}
			e.deletePod(ctx, t, name)
		})
	}

	t.Run("binpack beats the default spreading of a Service's pods", func(t *testing.T) {
		labels := map[string]string{"app": "preference-svc"}
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: "preference-svc", Namespace: namespace},
			Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(80)}}},
		}
		if _, err := e.cp.Kube.CoreV1().Services(namespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = e.cp.Kube.CoreV1().Services(namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{}) }()
		// kube-scheduler's default constraints spread a Service's pods over
		// nodes more strongly the more of them one node has.
		names := []string{"pref-svc-0", "pref-svc-1", "pref-svc-2", "pref-svc-3"}
		for _, name := range names {
			pod := gpuPod(name, group, nil, slice)
			pod.Labels = labels
			e.createPod(ctx, t, pod)
			if got, _ := e.waitBound(ctx, t, name); got.Spec.NodeName != busier {
				t.Errorf("pod %s went to %s, want the busier node %s", name, got.Spec.NodeName, busier)
			}
		}
		for _, name := range names {
			e.deletePod(ctx, t, name)
		}
	})
	e.deletePod(ctx, t, "pref-first")
}
