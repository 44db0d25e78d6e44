package viewsync

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/tracker"
)

func TestKeepPendingKeepsPendingPodsWhole(t *testing.T) {
	transform := keepPending(tracker.Trim(gpurequest.ResourceNames{Count: "nvidia.com/gpu"}))
	pod := func(node string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "p", Namespace: "ns", Labels: map[string]string{"app": "a"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			},
			Spec: corev1.PodSpec{
				NodeName:          node,
				PriorityClassName: "high",
				Containers:        []corev1.Container{{Name: "main", Image: "cuda"}},
			},
		}
	}

	got, err := transform(pod(""))
	if err != nil {
		t.Fatal(err)
	}
	pending := got.(*corev1.Pod)
	if pending.ManagedFields != nil {
		t.Error("a pending pod kept its managed fields")
	}
	if pending.Labels["app"] != "a" || pending.Spec.PriorityClassName != "high" || pending.Spec.Containers[0].Image != "cuda" {
		t.Errorf("a pending pod was trimmed: %+v", pending)
	}

	got, err = transform(pod("node-a"))
	if err != nil {
		t.Fatal(err)
	}
	bound := got.(*corev1.Pod)
	if bound.Labels != nil || bound.Spec.PriorityClassName != "" || bound.Spec.Containers != nil || bound.Spec.NodeName != "node-a" {
		t.Errorf("a bound pod was not trimmed as tracker.Trim does: %+v", bound)
	}
}
