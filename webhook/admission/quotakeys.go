package admission

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// quotaKeyWarnings returns a warning for each limit of a ResourceQuota of
// the namespace that looks like a GPU quota but does not count what
// Tessera allocates, naming the key to write instead: one of Tessera's
// totals without the requests. prefix (gpu.tessera.dev/memory,
// limits.gpu.tessera.dev/memory), which the API server accepts and
// Kubernetes never counts for a pod, or a per-GPU resource
// (requests.nvidia.com/gpumem), which it counts once a container however
// many GPUs the container has. Only in extender mode, where pods carry
// the totals.
func (a *Admitter) quotaKeyWarnings(ctx context.Context, namespace string) []string {
	if mode, ferr := a.modeOf(namespace); ferr != nil || mode != ModeExtender {
		return nil
	}
	quotas, err := a.quotas.ResourceQuotas(namespace).List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing ResourceQuotas for admission warnings", "namespace", namespace)
		return nil
	}
	slices.SortFunc(quotas, func(x, y *corev1.ResourceQuota) int { return cmp.Compare(x.Name, y.Name) })
	misread := a.misreadQuotaKeys()
	var out []string
	for _, q := range quotas {
		keys := make([]corev1.ResourceName, 0, len(q.Spec.Hard))
		for key := range q.Spec.Hard {
			if _, ok := misread[key]; ok {
				keys = append(keys, key)
			}
		}
		slices.Sort(keys)
		for _, key := range keys {
			out = append(out, fmt.Sprintf("ResourceQuota %s limits %s, %s", q.Name, key, misread[key]))
		}
	}
	return out
}

// misreadQuotaKeys returns, for each ResourceQuota key that does not
// count what Tessera allocates, why and what to write instead.
func (a *Admitter) misreadQuotaKeys() map[corev1.ResourceName]string {
	out := map[corev1.ResourceName]string{}
	for _, total := range gpurequest.QuotaResources {
		want := corev1.DefaultResourceRequestsPrefix + total
		never := "which Kubernetes never counts: write " + string(want)
		out[total] = never
		out["limits."+total] = never
	}
	names := a.cfg.ResourceNames
	for perGPU, total := range map[corev1.ResourceName]corev1.ResourceName{
		names.Memory: gpuv1alpha1.QuotaMemory, names.MemoryPercentage: gpuv1alpha1.QuotaMemory, names.Cores: gpuv1alpha1.QuotaCores,
	} {
		out[corev1.DefaultResourceRequestsPrefix+perGPU] = fmt.Sprintf(
			"which counts a container once, not per GPU: Tessera's total is %s%s", corev1.DefaultResourceRequestsPrefix, total)
	}
	return out
}
