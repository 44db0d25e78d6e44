package admission

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// modeOf returns the mode of the namespace's pods: its mode label, or
// else the webhook's. A label with another value is an error naming it,
// so that a typo does not silently send pods the other way.
func (a *Admitter) modeOf(namespace string) (string, *field.Error) {
	ns, err := a.namespaces.Get(namespace)
	if apierrors.IsNotFound(err) || err != nil {
		// A namespace created a moment ago may not be in the cache yet.
		return a.cfg.Mode, nil
	}
	v, ok := ns.Labels[a.cfg.ModeLabel]
	if !ok {
		return a.cfg.Mode, nil
	}
	switch v {
	case ModeExtender, ModeDRA:
		return v, nil
	}
	return "", field.NotSupported(field.NewPath("metadata", "namespace"), fmt.Sprintf("%s (labelled %s=%s)", namespace, a.cfg.ModeLabel, v),
		[]string{"a namespace labelled " + a.cfg.ModeLabel + "=" + ModeExtender, "a namespace labelled " + a.cfg.ModeLabel + "=" + ModeDRA, "a namespace without the label"})
}
