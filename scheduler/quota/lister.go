package quota

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
)

// Source tells a namespace's GPU limits.
type Source interface {
	Limits(namespace string) Limits
}

var _ Source = (*Lister)(nil)

// Lister reads the namespaces' GPU limits from an informer's cache of
// ResourceQuotas, as they are when asked.
type Lister struct {
	quotas corelisters.ResourceQuotaLister
}

// NewLister returns a Lister over the cache.
func NewLister(quotas corelisters.ResourceQuotaLister) *Lister {
	return &Lister{quotas: quotas}
}

// Limits returns the namespace's GPU limits.
func (l *Lister) Limits(namespace string) Limits {
	// Listing everything cannot fail: only a selector that does not parse does.
	quotas, _ := l.quotas.ResourceQuotas(namespace).List(labels.Everything())
	return FromQuotas(quotas)
}

// All returns the GPU limits of every namespace that has any.
func (l *Lister) All() map[string]Limits {
	quotas, _ := l.quotas.List(labels.Everything())
	byNamespace := map[string][]*corev1.ResourceQuota{}
	for _, q := range quotas {
		if Sets(q) {
			byNamespace[q.Namespace] = append(byNamespace[q.Namespace], q)
		}
	}
	out := make(map[string]Limits, len(byNamespace))
	for ns, qs := range byNamespace {
		if l := FromQuotas(qs); l.Enforced() {
			out[ns] = l
		}
	}
	return out
}
