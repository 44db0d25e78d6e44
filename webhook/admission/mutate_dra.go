package admission

import (
	"context"
	"encoding/json"
	"slices"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/webhook/draclaims"
)

// draScheduler names what places pods in DRA mode, for messages.
const draScheduler = "kube-scheduler (its DynamicResources plugin allocates the GPUs)"

// mutateForDRA turns the GPU resources of a pod into claims that stock
// kube-scheduler allocates from the GPUs of Tessera's DRA driver
// (draclaims.Translator says what they are): each
// container that asks for GPUs gets a claim of its own, made by
// kube-controller-manager from a ResourceClaimTemplate the webhook
// creates in the pod's namespace when it is absent (one per distinct
// request), and its GPU resources are removed, so that neither the
// kubelet's device manager nor kube-scheduler's resource fit sees them.
// The claims are owned by the pod: kube-controller-manager deletes them
// when it goes. The pod is held to the rules of extender mode, and is
// refused, naming the field and the limit, when DRA cannot express its
// request. The pod is as migMutations made it, and migOps, its patch, goes
// first.
func (a *Admitter) mutateForDRA(ctx context.Context, req *admissionv1.AdmissionRequest, pod *corev1.Pod, migOps []patchOp) *admissionv1.AdmissionResponse {
	if !a.podAsks(&pod.Spec) {
		return allowed(req)
	}
	name := pod.Name
	if name == "" {
		name = req.Name
	}
	// A slice without a count is a slice of one GPU, as in extender mode.
	counted := &corev1.Pod{ObjectMeta: pod.ObjectMeta, Spec: *a.withCounts(&pod.Spec)}
	refusals, asks := a.check(podTemplateOf(counted), draScheduler)
	if len(refusals) > 0 {
		return denied(req, name, refusals)
	}
	sel, _ := gpurequest.ParseAnnotations(pod.Annotations) // check refused any error
	templates, claimOps, refusals := a.claimMutations(pod, counted, asks, sel)
	ops := append(migOps, claimOps...)
	if len(refusals) > 0 {
		klog.FromContext(ctx).V(2).Info("Refusing GPU pod DRA cannot express", "reasons", len(refusals), "firstReason", refusals[0].String())
		return denied(req, name, refusals)
	}
	if a.cfg.DRASchedulerName != "" {
		ops = append(ops, schedulerMutations(pod, a.cfg.DRASchedulerName)...)
	}
	if req.DryRun == nil || !*req.DryRun {
		for _, t := range templates {
			if err := a.templates.Ensure(ctx, t); err != nil {
				klog.FromContext(ctx).Error(err, "Creating a ResourceClaimTemplate")
				return internalError(req, err.Error())
			}
		}
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return internalError(req, "encoding the patch: "+err.Error())
	}
	klog.FromContext(ctx).V(2).Info("Turning GPU pod into claims", "claims", len(asks), "templates", len(templates))
	patchType := admissionv1.PatchTypeJSONPatch
	resp := &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Patch: patch, PatchType: &patchType}
	resp.Warnings = append(draclaims.Warnings(pod.Annotations, sel), a.warnings(ctx, requestsOf(asks))...)
	return resp
}

// claimMutations returns the templates of the pod's claims and the patch
// that gives each asking container its claim and removes its GPU
// resources. asks are containers of counted, the pod with its counts.
func (a *Admitter) claimMutations(pod, counted *corev1.Pod, asks []containerAsk, sel gpurequest.Selection) ([]*resourceapi.ResourceClaimTemplate, []patchOp, []refusal) {
	containers := make([]draclaims.Container, 0, len(asks))
	for _, ask := range asks {
		containers = append(containers, draclaims.Container{Request: ask.request, Path: ask.path})
	}
	translation, refused := a.claims.Translate(pod, containers, sel)
	if len(refused) > 0 {
		refusals := make([]refusal, 0, len(refused))
		for _, r := range refused {
			refusals = append(refusals, refusal{container: r.Container, err: r.Err})
		}
		return nil, nil, refusals
	}
	var ops []patchOp
	lists := []struct {
		name                string
		original, withCount []corev1.Container
	}{
		{"initContainers", pod.Spec.InitContainers, counted.Spec.InitContainers},
		{"containers", pod.Spec.Containers, counted.Spec.Containers},
	}
	for _, list := range lists {
		for i := range list.withCount {
			k := slices.IndexFunc(asks, func(ask containerAsk) bool { return ask.container == &list.withCount[i] })
			if k >= 0 {
				ops = append(ops, a.containerClaimOps(list.name, i, &list.original[i], translation.Claims[k].Name)...)
			}
		}
	}
	if len(pod.Spec.ResourceClaims) == 0 {
		ops = append(ops, patchOp{Op: "add", Path: pointer("spec", "resourceClaims"), Value: translation.Claims})
	} else {
		for _, c := range translation.Claims {
			ops = append(ops, patchOp{Op: "add", Path: pointer("spec", "resourceClaims", "-"), Value: c})
		}
	}
	return translation.Templates, ops, nil
}

// containerClaimOps remove the container's GPU resources and let it use
// the pod's claim.
func (a *Admitter) containerClaimOps(list string, i int, c *corev1.Container, claim string) []patchOp {
	path := func(tokens ...string) string {
		return pointer(append([]string{"spec", list, index(i), "resources"}, tokens...)...)
	}
	var ops []patchOp
	for _, name := range a.cfg.ResourceNames.All() {
		if _, ok := c.Resources.Limits[name]; ok {
			ops = append(ops, patchOp{Op: "remove", Path: path("limits", string(name))})
		}
		if _, ok := c.Resources.Requests[name]; ok {
			ops = append(ops, patchOp{Op: "remove", Path: path("requests", string(name))})
		}
	}
	use := corev1.ResourceClaim{Name: claim}
	if len(c.Resources.Claims) == 0 {
		ops = append(ops, patchOp{Op: "add", Path: path("claims"), Value: []corev1.ResourceClaim{use}})
	} else {
		ops = append(ops, patchOp{Op: "add", Path: path("claims", "-"), Value: use})
	}
	return ops
}
