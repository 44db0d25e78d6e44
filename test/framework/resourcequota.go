package framework

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CreateResourceQuota creates q and waits until the resourcequota
// controller (Options.ControllerManager) has counted it: until then
// ResourceQuota's admission refuses every pod that asks for what q
// limits.
func (cp *ControlPlane) CreateResourceQuota(ctx context.Context, t testing.TB, q *corev1.ResourceQuota) *corev1.ResourceQuota {
	t.Helper()
	created, err := cp.Kube.CoreV1().ResourceQuotas(q.Namespace).Create(ctx, q, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating ResourceQuota %s/%s: %v", q.Namespace, q.Name, err)
	}
	WaitFor(t, 30*time.Second, "the resourcequota controller to count ResourceQuota "+q.Name, func() (bool, string) {
		got, err := cp.Kube.CoreV1().ResourceQuotas(q.Namespace).Get(ctx, q.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		created = got
		// It writes status.used with status.hard, in one update.
		return apiequality.Semantic.DeepEqual(got.Status.Hard, got.Spec.Hard),
			"status.hard " + ResourceListString(got.Status.Hard) + "; status.used " + ResourceListString(got.Status.Used)
	})
	return created
}

// ResourceListString writes l as name=quantity pairs, sorted by name.
func ResourceListString(l corev1.ResourceList) string {
	parts := make([]string, 0, len(l))
	for name, q := range l {
		parts = append(parts, string(name)+"="+q.String())
	}
	slices.Sort(parts)
	return strings.Join(parts, ", ")
}
