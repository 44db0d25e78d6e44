package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// optedOut reports why the webhook must leave the pod alone, or "" when it
// must not. The webhook configurations' selectors already skip opted-out
// pods and namespaces; this check stands in for a configuration that was
// edited or installed without them.
func (a *Admitter) optedOut(ctx context.Context, namespace string, pod *corev1.Pod) string {
	if pod.Labels[a.cfg.OptOutLabel] == a.cfg.OptOutValue {
		return "pod is labelled " + a.cfg.OptOutLabel + "=" + a.cfg.OptOutValue
	}
	ns, err := a.namespaces.Get(namespace)
	switch {
	case apierrors.IsNotFound(err):
		// A namespace created a moment ago may not have reached the
		// informer yet; it cannot carry the label without the
		// namespaceSelector having seen it.
		klog.FromContext(ctx).V(4).Info("Namespace not in cache, treating it as not opted out", "namespace", namespace)
		return ""
	case err != nil:
		klog.FromContext(ctx).Error(err, "Reading namespace, treating it as not opted out", "namespace", namespace)
		return ""
	}
	if ns.Labels[a.cfg.OptOutLabel] == a.cfg.OptOutValue {
		return "namespace is labelled " + a.cfg.OptOutLabel + "=" + a.cfg.OptOutValue
	}
	return ""
}
