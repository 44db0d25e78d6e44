package admission

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// migMutations returns the pod, or Job's pod template, with NVIDIA's MIG
// resources (nvidia.com/mig-<profile>, gpurequest.SpecMIGAsk) turned into
// what Tessera already places, and the patch that does so: each asking
// container gets a GPU count of 1 in their stead, and the pod the
// tessera.dev/mig-profile annotation with the profile. Neither the
// kubelet's device manager nor kube-scheduler's resource fit then sees a
// resource no node advertises, and the instance is handed out as any
// instance asked for by the annotation is, in every mode. A template that
// asks for no MIG resource is returned as it is, with no patch; one that
// asks for what Tessera cannot serve is refused.
func (a *Admitter) migMutations(t podTemplate) (podTemplate, []patchOp, []refusal) {
	names := a.cfg.ResourceNames
	ask, errs := gpurequest.SpecMIGAsk(t.meta.Annotations, t.spec, t.path("spec"), t.path("metadata", "annotations"), names)
	if len(errs) > 0 {
		refusals := make([]refusal, 0, len(errs))
		for _, err := range errs {
			refusals = append(refusals, refusal{err: err})
		}
		return t, nil, refusals
	}
	if ask.Profile == "" {
		return t, nil, nil
	}
	out := podTemplate{meta: t.meta.DeepCopy(), spec: t.spec.DeepCopy(), at: t.at}
	var ops []patchOp
	for _, list := range []struct {
		name             string
		original, copied []corev1.Container
	}{
		{"initContainers", t.spec.InitContainers, out.spec.InitContainers},
		{"containers", t.spec.Containers, out.spec.Containers},
	} {
		for i := range list.original {
			k := slices.IndexFunc(ask.Containers, func(m gpurequest.MIGContainer) bool { return m.Container == &list.original[i] })
			if k >= 0 {
				ops = append(ops, a.migContainerOps(t, list.name, i, &list.copied[i], ask.Containers[k])...)
			}
		}
	}
	if _, ok := t.meta.Annotations[gpurequest.AnnotationMIGProfile]; !ok {
		if t.meta.Annotations == nil {
			ops = append(ops, patchOp{Op: "add", Path: t.pointer("metadata", "annotations"), Value: map[string]string{}})
			out.meta.Annotations = map[string]string{}
		}
		ops = append(ops, patchOp{Op: "add", Path: t.pointer("metadata", "annotations", gpurequest.AnnotationMIGProfile), Value: ask.Profile})
		out.meta.Annotations[gpurequest.AnnotationMIGProfile] = ask.Profile
	}
	return out, ops, nil
}

// migContainerOps returns the patch that puts a GPU count of 1 in the
// stead of the container's MIG resource, and makes the same change to c,
// the container's copy.
func (a *Admitter) migContainerOps(t podTemplate, list string, i int, c *corev1.Container, m gpurequest.MIGContainer) []patchOp {
	count := a.cfg.ResourceNames.Count
	path := func(tokens ...string) string {
		return t.pointer(append([]string{"spec", list, index(i), "resources"}, tokens...)...)
	}
	ops := []patchOp{
		{Op: "remove", Path: path("limits", string(m.Resource))},
		{Op: "add", Path: path("limits", string(count)), Value: "1"},
	}
	delete(c.Resources.Limits, m.Resource)
	c.Resources.Limits[count] = resource.MustParse("1")
	if m.InRequests {
		ops = append(ops,
			patchOp{Op: "remove", Path: path("requests", string(m.Resource))},
			patchOp{Op: "add", Path: path("requests", string(count)), Value: "1"})
		delete(c.Resources.Requests, m.Resource)
		c.Resources.Requests[count] = resource.MustParse("1")
	}
	return ops
}
