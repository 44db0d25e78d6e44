package admission

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

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
	out, _, ops, refusals := a.migAsked(t)
	return out, ops, refusals
}

// migAsked is migMutations that also returns the profile asked, empty
// when none.
func (a *Admitter) migAsked(t podTemplate) (podTemplate, string, []patchOp, []refusal) {
	names := a.cfg.ResourceNames
	ask, errs := gpurequest.SpecMIGAsk(t.meta.Annotations, t.spec, t.path("spec"), t.path("metadata", "annotations"), names)
	if len(errs) > 0 {
		refusals := make([]refusal, 0, len(errs))
		for _, err := range errs {
			refusals = append(refusals, refusal{err: err})
		}
		return t, "", nil, refusals
	}
	if ask.Profile == "" {
		return t, "", nil, nil
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
	return out, ask.Profile, ops, nil
}

// migWarnings warns that no GPU of the cluster, as it is now, is a MIG
// instance of the profile a pod asks for by NVIDIA's name, naming the
// profiles there are. The cluster may change, so this is a warning, not a
// refusal; the scheduler says the same when it cannot place the pod.
func (a *Admitter) migWarnings(ctx context.Context, profile string) []string {
	if profile == "" {
		return nil
	}
	nodes, err := a.gpuNodes.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing GPUNodes for admission warnings")
		return nil
	}
	var profiles []string
	for _, n := range nodes {
		for _, d := range n.Status.Devices {
			if d.MIG == nil {
				continue
			}
			if strings.EqualFold(d.MIG.Profile, profile) {
				return nil
			}
			profiles = append(profiles, d.MIG.Profile)
		}
	}
	there := "no GPU in the cluster is in MIG mode"
	if len(profiles) > 0 {
		slices.Sort(profiles)
		there = "the cluster's MIG instances are " + strings.Join(slices.Compact(profiles), ", ")
	}
	return []string{fmt.Sprintf("the pod asks for %s, but no GPU in the cluster is a %s MIG instance now (%s): it stays Pending until one is",
		gpurequest.MIGResourceName(profile), profile, there)}
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
