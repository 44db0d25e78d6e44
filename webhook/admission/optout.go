package admission

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"
)

// optedOut reports why the webhook must leave the object alone, or ""
// when it must not: the object (a pod, or a Job or its pod template), as
// labelled by each of labels, or its namespace opted out. The webhook
// configurations' selectors already skip opted-out objects and
// namespaces; this check stands in for a configuration that was edited or
// installed without them, and for a Job's template, which no selector
// reads.
func (a *Admitter) optedOut(ctx context.Context, namespace string, labels ...map[string]string) string {
	for _, l := range labels {
		if l[a.cfg.OptOutLabel] == a.cfg.OptOutValue {
			return "labelled " + a.cfg.OptOutLabel + "=" + a.cfg.OptOutValue
		}
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
