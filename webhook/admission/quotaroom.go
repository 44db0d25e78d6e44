package admission

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// quotaExcesses returns a refusal for each GPU quota resource of a
// ResourceQuota of the namespace that the pod does not fit beside what the
// namespace uses, naming the namespace, what is used, what was asked and
// the limit. ResourceQuota's own admission, which runs after the webhooks
// and counts under a lock, stays what keeps a namespace within its quota;
// this check, from the informer's view, only says why more clearly.
func (a *Admitter) quotaExcesses(ctx context.Context, namespace string, pod *corev1.Pod) []refusal {
	quotas, err := a.quotas.ResourceQuotas(namespace).List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing ResourceQuotas, leaving the GPU quota to ResourceQuota's admission", "namespace", namespace)
		return nil
	}
	if len(quotas) == 0 {
		return nil
	}
	// What ResourceQuota charges the pod: the larger of its longest init
	// phase and its long-running containers, as Kubernetes counts them.
	asked := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	var refusals []refusal
	for _, q := range quotas {
		if !quotaCovers(q, pod) {
			continue
		}
		for _, name := range gpurequest.QuotaResources {
			key := corev1.ResourceName(corev1.DefaultResourceRequestsPrefix + string(name))
			limit, limited := q.Spec.Hard[key]
			ask := asked[name]
			if !limited || ask.IsZero() {
				continue
			}
			used := q.Status.Used[key]
			excess := gpurequest.QuotaExcess{
				Namespace: namespace, Quota: q.Name, Resource: name,
				Used: used.Value(), Asked: ask.Value(), Limit: gpurequest.QuotaLimit(limit),
			}
			// Not Used+Asked: a limit beyond an int64 reads as MaxInt64.
			if excess.Used <= excess.Limit-excess.Asked {
				continue
			}
			refusals = append(refusals, refusal{err: field.Forbidden(field.NewPath("metadata", "namespace"), excess.String())})
		}
	}
	return refusals
}

// quotaCovers reports whether the quota counts the pod, by the quota's
// scopes as ResourceQuota reads them. A scope that cannot count a pod's
// GPUs (CrossNamespacePodAffinity, or one this webhook does not know) is
// left to ResourceQuota's admission.
func quotaCovers(q *corev1.ResourceQuota, pod *corev1.Pod) bool {
	selectors := make([]corev1.ScopedResourceSelectorRequirement, 0, len(q.Spec.Scopes))
	for _, s := range q.Spec.Scopes {
		selectors = append(selectors, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if q.Spec.ScopeSelector != nil {
		selectors = append(selectors, q.Spec.ScopeSelector.MatchExpressions...)
	}
	for _, s := range selectors {
		if !scopeMatches(s, pod) {
			return false
		}
	}
	return true
}

// scopeMatches reports whether one scope of a quota matches the pod.
func scopeMatches(s corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) bool {
	terminating := pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
	switch s.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		class := pod.Spec.PriorityClassName
		switch s.Operator {
		case corev1.ScopeSelectorOpExists:
			return class != ""
		case corev1.ScopeSelectorOpDoesNotExist:
			return class == ""
		case corev1.ScopeSelectorOpIn:
			return class != "" && slices.Contains(s.Values, class)
		case corev1.ScopeSelectorOpNotIn:
			return class == "" || !slices.Contains(s.Values, class)
		}
	}
	return false
}

// bestEffort reports whether the pod is of QoS class BestEffort: no
// container, and not the pod, asks for CPU or memory.
func bestEffort(pod *corev1.Pod) bool {
	asks := func(l corev1.ResourceList) bool {
		cpu, memory := l[corev1.ResourceCPU], l[corev1.ResourceMemory]
		return !cpu.IsZero() || !memory.IsZero()
	}
	if pod.Spec.Resources != nil && (asks(pod.Spec.Resources.Requests) || asks(pod.Spec.Resources.Limits)) {
		return false
	}
	all := append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...)
	return !slices.ContainsFunc(all, func(c corev1.Container) bool {
		return asks(c.Resources.Requests) || asks(c.Resources.Limits)
	})
}
