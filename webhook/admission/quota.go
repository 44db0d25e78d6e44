package admission

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// A namespace's GPU quota is a ResourceQuota on the totals of
// gpurequest.QuotaTotals (apis/gpu/v1alpha1's QuotaMemory, QuotaCores,
// QuotaGPUs). In extender mode the mutation writes each container's
// totals as requests and equal limits, over whatever the pod wrote under
// those names, so that ResourceQuota counts them (with Kubernetes' own
// rule for init and sidecar containers); the validation refuses a pod
// whose totals are not those, as when it was created past the mutation.

// withCounts returns a copy of the pod spec in which every container that
// asks for a slice without a GPU count has a count of 1 in its limits, as
// the mutation writes it: such a slice is a slice of one GPU.
func (a *Admitter) withCounts(spec *corev1.PodSpec) *corev1.PodSpec {
	counted := spec.DeepCopy()
	gpurequest.EachSpecContainer(counted, field.NewPath("spec"), func(c *corev1.Container, _ gpuv1alpha1.ContainerKind, _ *field.Path) {
		if u := a.useOf(c); u.slice && !u.count {
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			c.Resources.Limits[a.cfg.ResourceNames.Count] = resource.MustParse("1")
		}
	})
	return counted
}

// quotaTotals returns the quota totals the container must carry (none when
// it asks for no GPU), and false when its request breaks a rule, which the
// validation refuses.
func (a *Admitter) quotaTotals(c *corev1.Container) (corev1.ResourceList, bool) {
	if !a.useOf(c).asks() {
		return nil, true
	}
	// The kind and path matter only to what the totals do not use.
	req, _, errs := gpurequest.ContainerRequestOf(c, gpuv1alpha1.ContainerApp, a.cfg.ResourceNames, field.NewPath("spec"))
	if len(errs) > 0 {
		return nil, false
	}
	return req.QuotaTotals().ResourceList(), true
}

// quotaMutations returns the patch that gives every container of counted,
// the pod or pod template with the counts countMutations adds, its quota
// totals in its limits and requests, and takes them from a container that
// asks for no GPU.
func (a *Admitter) quotaMutations(counted podTemplate) []patchOp {
	var ops []patchOp
	for _, list := range []struct {
		name       string
		containers []corev1.Container
	}{{"initContainers", counted.spec.InitContainers}, {"containers", counted.spec.Containers}} {
		for i := range list.containers {
			c := &list.containers[i]
			want, ok := a.quotaTotals(c)
			if !ok {
				continue
			}
			base := append(slices.Clone(counted.at), "spec", list.name, index(i), "resources")
			ops = append(ops, quotaListOps(base, "limits", c.Resources.Limits, want)...)
			ops = append(ops, quotaListOps(base, "requests", c.Resources.Requests, want)...)
		}
	}
	return ops
}

// quotaListOps are the operations that make the quota resources of one
// resource list, have, those of want; base is the path of the container's
// resources.
func quotaListOps(base []string, list string, have, want corev1.ResourceList) []patchOp {
	if have == nil {
		if len(want) == 0 {
			return nil
		}
		value := map[string]string{}
		for name, q := range want {
			value[string(name)] = plain(q)
		}
		return []patchOp{{Op: "add", Path: pointer(append(base, list)...), Value: value}}
	}
	var ops []patchOp
	for _, name := range gpurequest.QuotaResources {
		path := pointer(append(base, list, string(name))...)
		h, has := have[name]
		w, wants := want[name]
		switch {
		case wants && (!has || h.Cmp(w) != 0):
			ops = append(ops, patchOp{Op: "add", Path: path, Value: plain(w)})
		case !wants && has:
			ops = append(ops, patchOp{Op: "remove", Path: path})
		}
	}
	return ops
}

// quotaMismatches returns a refusal for every quota resource of a
// container that is not the total the mutation writes: a pod created past
// the mutation, or changed after it, would be counted wrong.
func (a *Admitter) quotaMismatches(t podTemplate) []refusal {
	var refusals []refusal
	gpurequest.EachSpecContainer(t.spec, t.path("spec"), func(c *corev1.Container, _ gpuv1alpha1.ContainerKind, path *field.Path) {
		want, ok := a.quotaTotals(c)
		if !ok {
			return
		}
		for _, name := range gpurequest.QuotaResources {
			fld := path.Child("resources", "limits").Key(string(name))
			got, has := c.Resources.Limits[name]
			if q, inRequests := c.Resources.Requests[name]; !has && inRequests {
				got, has = q, true
				fld = path.Child("resources", "requests").Key(string(name))
			}
			w, wants := want[name]
			if got.Cmp(w) == 0 {
				continue
			}
			var err *field.Error
			switch {
			case !wants:
				err = field.Invalid(fld, plain(got), fmt.Sprintf("must not be set: %s", a.quotaWhyNone(name, c)))
			case !has:
				err = field.Required(fld, fmt.Sprintf("must be %s in limits and requests: %s", plain(w), a.quotaWhy(name)))
			default:
				err = field.Invalid(fld, plain(got), fmt.Sprintf("must be %s in limits and requests: %s", plain(w), a.quotaWhy(name)))
			}
			refusals = append(refusals, refusal{container: c.Name, err: err})
		}
	})
	return refusals
}

// plain writes a quota total as a whole number (20000, where the
// quantity's canonical form is 20k), in patches and messages alike.
func plain(q resource.Quantity) string { return strconv.FormatInt(q.Value(), 10) }

// quotaWhy says how a quota total is derived and why it must be right.
func (a *Admitter) quotaWhy(name corev1.ResourceName) string {
	n := a.cfg.ResourceNames
	how := map[corev1.ResourceName]string{
		gpuv1alpha1.QuotaGPUs:   string(n.Count),
		gpuv1alpha1.QuotaCores:  fmt.Sprintf("%s x %s; 100 per GPU for exclusive use or a whole GPU", n.Cores, n.Count),
		gpuv1alpha1.QuotaMemory: fmt.Sprintf("%s x %s", n.Memory, n.Count),
	}[name]
	return fmt.Sprintf("the container's %s (%s), the total its namespace's ResourceQuota counts, which Tessera's mutating webhook writes; a pod that skipped it would be counted wrong",
		gpurequest.QuotaUnit(name), how)
}

// quotaWhyNone says why a container carries no total of a quota resource.
func (a *Admitter) quotaWhyNone(name corev1.ResourceName, c *corev1.Container) string {
	if !a.useOf(c).asks() {
		return "the container asks for no GPU, and a pod that asks for GPUs carries its GPU quota totals only on the containers that use them"
	}
	if name == gpuv1alpha1.QuotaMemory {
		return fmt.Sprintf("the container's GPU memory is not known until its GPUs are chosen (%s, or a whole GPU), so the scheduler counts it against the namespace's quota", a.cfg.ResourceNames.MemoryPercentage)
	}
	return fmt.Sprintf("the container asks for no %s", gpurequest.QuotaUnit(name))
}
