package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// quotaUnstated returns a refusal for each container of t that shares GPUs
// without stating its compute, when a ResourceQuota of the namespace that
// counts the pod limits compute: such a slice would count 0 toward the
// quota and run with no compute limit. kube-apiserver refuses a pod that
// states no CPU under a quota on CPU alike. The scheduler refuses the same
// pods, in the same words, when they skipped the webhook.
func (a *Admitter) quotaUnstated(ctx context.Context, namespace string, t podTemplate) []refusal {
	quotas, err := a.quotas.ResourceQuotas(namespace).List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing ResourceQuotas, leaving GPU compute unchecked", "namespace", namespace)
		return nil
	}
	key := corev1.ResourceName(corev1.DefaultResourceRequestsPrefix + gpuv1alpha1.QuotaCores)
	pod := &corev1.Pod{ObjectMeta: *t.meta, Spec: *t.spec}
	var limiting *corev1.ResourceQuota
	for _, q := range quotas {
		// Of several, the first by name is named, as the scheduler names it.
		if _, ok := q.Spec.Hard[key]; ok && quotaCovers(q, pod) && (limiting == nil || q.Name < limiting.Name) {
			limiting = q
		}
	}
	if limiting == nil {
		return nil
	}
	cores := a.cfg.ResourceNames.Cores
	var refusals []refusal
	gpurequest.EachSpecContainer(t.spec, t.path("spec"), func(c *corev1.Container, kind gpuv1alpha1.ContainerKind, path *field.Path) {
		if !a.useOf(c).asks() {
			return
		}
		req, _, errs := gpurequest.ContainerRequestOf(c, kind, a.cfg.ResourceNames, path)
		if len(errs) > 0 || !req.ComputeUnbounded() {
			return
		}
		why := gpurequest.QuotaUnstated{Namespace: namespace, Quota: limiting.Name, Field: string(cores), Containers: []string{c.Name}}
		refusals = append(refusals, refusal{container: c.Name, err: field.Required(path.Child("resources", "limits").Key(string(cores)), why.String())})
	})
	return refusals
}
