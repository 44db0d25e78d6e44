package admission

import (
	"context"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// Validate answers the validating webhook: it refuses a pod whose GPU
// request no GPU can ever serve, naming each container, field and limit,
// and in extender mode a pod whose GPU quota totals are not those the
// mutation writes or that its namespace's ResourceQuota has no room for
// (checkQuota), and a pod created by hand with Kueue's gang-fit
// annotation (handSetGangHold); it warns about a request larger than any GPU the cluster
// has now, and about a quota of the namespace that does not count what
// Tessera allocates (quotaKeyWarnings). A pod that asks for no GPU is
// admitted. A Job is held to the
// same rules by its pod template (validateJob).
func (a *Admitter) Validate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	switch {
	case reviewsJob(req):
		return a.validateJob(ctx, req)
	case reviewsDeployment(req):
		return a.validateDeployment(ctx, req)
	}
	pod, resp := a.podUnderReview(ctx, req)
	if resp != nil {
		return resp
	}
	name := pod.Name
	if name == "" {
		name = req.Name
	}
	resp = a.validated(ctx, req, name, podTemplateOf(pod), func() []refusal {
		if r := handSetGangHold(pod); r != nil {
			return []refusal{*r}
		}
		return a.checkQuota(ctx, req.Namespace, pod)
	})
	return a.withQueueWarning(ctx, req, resp, kueuePod, &pod.ObjectMeta, &pod.Spec)
}

// handSetGangHold refuses a pod created with gpuv1alpha1.GangHoldAnnotation
// and no controller: Kueue sets the annotation through the pod template
// of a Workload's owner, or on a plain pod by an update when it admits
// it, never on a pod created alone, and the scheduler places a pod that
// carries it in room held for the Workload's pods.
func handSetGangHold(pod *corev1.Pod) *refusal {
	if _, ok := pod.Annotations[gpuv1alpha1.GangHoldAnnotation]; !ok || metav1.GetControllerOfNoCopy(pod) != nil {
		return nil
	}
	return &refusal{err: field.Forbidden(field.NewPath("metadata", "annotations").Key(gpuv1alpha1.GangHoldAnnotation),
		"must not be set on a pod created without a controller: Kueue sets it, through the pod template of the Workload's owner "+
			"or when it admits a plain pod, to place the pod in the GPU room held for that Workload, which a pod created with it by hand would take")}
}

// validated checks a pod, or a Job's pod template, by the rules that
// protect a node and, when it asks for GPUs and they hold, by what only
// the pod is checked for (its quota, its gang-fit annotation): it
// refuses it for every reason found, or admits it with a warning for each
// request no GPU of the cluster can serve and each quota key that does
// not count what Tessera allocates.
func (a *Admitter) validated(ctx context.Context, req *admissionv1.AdmissionRequest, name string, t podTemplate, more func() []refusal) *admissionv1.AdmissionResponse {
	refusals, asks := a.check(t, fmt.Sprintf("scheduler %q", a.cfg.SchedulerName))
	if len(asks) > 0 {
		refusals = more()
	}
	if len(refusals) > 0 {
		klog.FromContext(ctx).V(2).Info("Refusing GPU workload", "kind", req.Kind.Kind, "reasons", len(refusals), "firstReason", refusals[0].String())
		return denied(req, name, refusals)
	}
	resp := allowed(req)
	if len(asks) > 0 {
		resp.Warnings = append(a.warnings(ctx, requestsOf(asks)), a.quotaKeyWarnings(ctx, req.Namespace)...)
	}
	return resp
}

// checkQuota returns the reasons to refuse a pod that asks for GPUs on
// account of its namespace's GPU quota: totals other than the mutation's,
// a slice without compute under a quota on compute, or none for a quota
// that has no room. In DRA mode the pod carries no
// totals: its claims are what ResourceQuota counts.
func (a *Admitter) checkQuota(ctx context.Context, namespace string, pod *corev1.Pod) []refusal {
	if mode, ferr := a.modeOf(namespace); ferr != nil || mode != ModeExtender {
		return nil
	}
	t := podTemplateOf(pod)
	if refusals := append(a.quotaMismatches(t), a.quotaUnstated(ctx, namespace, t)...); len(refusals) > 0 {
		return refusals
	}
	return a.quotaExcesses(ctx, namespace, pod)
}

// containerAsk is a container that asks for GPUs, with its request and
// its path in the pod.
type containerAsk struct {
	container *corev1.Container
	request   gpurequest.ContainerRequest
	path      *field.Path
}

func requestsOf(asks []containerAsk) []gpurequest.ContainerRequest {
	out := make([]gpurequest.ContainerRequest, 0, len(asks))
	for _, a := range asks {
		out = append(out, a.request)
	}
	return out
}

// check returns every reason to refuse the pod, or the pods a Job's
// template makes, and, when there is none, its containers that ask for
// GPUs. scheduler names what assigns the GPUs.
func (a *Admitter) check(t podTemplate, scheduler string) ([]refusal, []containerAsk) {
	var (
		refusals []refusal
		asks     []containerAsk
		asksGPUs bool
	)
	visit := func(c *corev1.Container, kind gpuv1alpha1.ContainerKind, path *field.Path) {
		if !a.useOf(c).asks() {
			return
		}
		asksGPUs = true
		// The same rules the extender holds every pod to, whether or not
		// the webhook saw it.
		req, _, errs := gpurequest.ContainerRequestOf(c, kind, a.cfg.ResourceNames, path)
		for _, err := range errs {
			refusals = append(refusals, refusal{container: c.Name, err: err})
		}
		if len(errs) == 0 {
			asks = append(asks, containerAsk{container: c, request: req, path: path})
		}
	}
	gpurequest.EachSpecContainer(t.spec, t.path("spec"), visit)
	// A pod the mutation saw carries no MIG resource; one it did not is
	// held to the same rules.
	_, migErrs := gpurequest.SpecMIGAsk(t.meta.Annotations, t.spec, t.path("spec"), t.path("metadata", "annotations"), a.cfg.ResourceNames)
	for _, err := range migErrs {
		refusals = append(refusals, refusal{err: err})
	}
	if !asksGPUs {
		return refusals, nil
	}
	if t.spec.NodeName != "" {
		refusals = append(refusals, refusal{err: field.Forbidden(t.path("spec", "nodeName"), fmt.Sprintf(
			"must be empty when the pod asks for GPUs: %s must place the pod, since it is what assigns the GPUs", scheduler))})
	}
	sel, err := gpurequest.ParseAnnotations(t.meta.Annotations)
	if err != nil {
		for _, ferr := range fieldErrors(err, t.path("metadata", "annotations")) {
			refusals = append(refusals, refusal{err: ferr})
		}
	}
	if key := gpurequest.MIGOnlyKey(t.meta.Annotations, sel); key != "" {
		count := a.cfg.ResourceNames.Count
		for _, ask := range asks {
			if err := gpurequest.MIGCountError(ask.request, key, ask.path.Child("resources", "limits").Key(string(count)), count); err != nil {
				refusals = append(refusals, refusal{container: ask.container.Name, err: err})
			}
		}
	}
	if len(refusals) > 0 {
		return refusals, nil
	}
	return nil, asks
}

// fieldErrors unpacks the field errors of an aggregate; anything else
// becomes one error on the fallback path.
func fieldErrors(err error, fallback *field.Path) field.ErrorList {
	var errs []error
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		errs = agg.Errors()
	} else {
		errs = []error{err}
	}
	var out field.ErrorList
	for _, e := range errs {
		var ferr *field.Error
		if errors.As(e, &ferr) {
			out = append(out, ferr)
		} else {
			out = append(out, field.Invalid(fallback, "", e.Error()))
		}
	}
	return out
}
