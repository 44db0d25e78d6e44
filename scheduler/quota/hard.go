package quota

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
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
// quotas without scopes (see the package comment). A limit that is not a
// whole number counts as the whole number below it, which admits exactly
// what it admits, since use is whole; a negative one admits nothing of its
// resource; one beyond an int64 limits nothing that can be asked.
func FromQuotas(quotas []*corev1.ResourceQuota) Limits {
	var l Limits
	for _, q := range quotas {
		if len(q.Spec.Scopes) > 0 || q.Spec.ScopeSelector != nil {
			continue
		}
		for key, limit := range map[corev1.ResourceName]*Limit{KeyMemory: &l.MemoryMiB, KeyCores: &l.Cores, KeyGPUs: &l.GPUs} {
			if hard, ok := q.Spec.Hard[key]; ok {
				limit.tighten(floor(hard), q.Name)
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

// floor is the largest int64 not above q, within int64's range.
func floor(q resource.Quantity) int64 {
	switch {
	case q.CmpInt64(math.MaxInt64) >= 0:
		return math.MaxInt64
	case q.CmpInt64(math.MinInt64) <= 0:
		return math.MinInt64
	}
	// Value rounds away from zero.
	v := q.Value()
	if q.CmpInt64(v) < 0 {
		v--
	}
	return v
}
