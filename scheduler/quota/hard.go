package quota

import (
	corev1 "k8s.io/api/core/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// Keys are the names under which a ResourceQuota's spec.hard limits
// Tessera's GPU resources: extended resources are limited by their
// requests only.
const (
	KeyMemory = corev1.ResourceName(corev1.DefaultResourceRequestsPrefix) + gpuv1alpha1.QuotaMemory
	KeyCores  = corev1.ResourceName(corev1.DefaultResourceRequestsPrefix) + gpuv1alpha1.QuotaCores
	KeyGPUs   = corev1.ResourceName(corev1.DefaultResourceRequestsPrefix) + gpuv1alpha1.QuotaGPUs
)

// FromQuotas returns the tightest limit of each GPU resource among the
// quotas without scopes (see the package comment), read as
// gpurequest.QuotaLimit reads it: a limit between whole numbers is the
// whole number below it, one beyond an int64 limits nothing that can be
// asked, and a negative one (which the API server refuses) admits nothing
// of its resource.
func FromQuotas(quotas []*corev1.ResourceQuota) Limits {
	var l Limits
	for _, q := range quotas {
		if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil {
			continue
		}
		for key, limit := range map[corev1.ResourceName]*Limit{KeyMemory: &l.MemoryMiB, KeyCores: &l.Cores, KeyGPUs: &l.GPUs} {
			if hard, ok := q.Spec.Hard[key]; ok {
				limit.tighten(gpurequest.QuotaLimit(hard), q.Name)
			}
		}
	}
	return l
}

// Sets reports whether the quota limits any GPU resource, scoped or not:
// a change to it may change what a namespace may take.
func Sets(q *corev1.ResourceQuota) bool {
	for _, key := range []corev1.ResourceName{KeyMemory, KeyCores, KeyGPUs} {
		if _, ok := q.Spec.Hard[key]; ok {
			return true
		}
	}
	return false
}
