package admission

import (
	"context"
	"encoding/json"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// Mutate answers the mutating webhook. In extender mode it gives a count
// of 1 to every container that asks for a GPU slice without a count,
// writes each container's GPU quota totals (quotaMutations), and hands
// pods that ask for GPUs to Tessera's scheduler unless they name another
// scheduler, gating those of Config.FitGateSchedulers (fitGateMutations);
// in DRA mode (the webhook's, or the namespace's mode
// label) it turns their GPU resources into claims (mutateForDRA). A pod
// that asks for no GPU is admitted unchanged. NVIDIA's MIG resources
// become what Tessera places first, in both modes (migMutations). A Job's pod template gets
// the counts and totals a pod would (mutateJob). A GPU pod that names a
// PodGroup the cluster does not serve is warned about (podGroupWarning).
func (a *Admitter) Mutate(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	if reviewsJob(req) {
		return a.mutateJob(ctx, req)
	}
	pod, resp := a.podUnderReview(ctx, req)
	if resp != nil {
		return resp
	}
	mode, ferr := a.modeOf(req.Namespace)
	if ferr != nil {
		return denied(req, req.Name, []refusal{{err: ferr}})
	}
	t, profile, migOps, refusals := a.migAsked(podTemplateOf(pod))
	if len(refusals) > 0 {
		name := pod.Name
		if name == "" {
			name = req.Name
		}
		return denied(req, name, refusals)
	}
	pod = &corev1.Pod{TypeMeta: pod.TypeMeta, ObjectMeta: *t.meta, Spec: *t.spec, Status: pod.Status}
	if mode == ModeDRA {
		resp = a.mutateForDRA(ctx, req, pod, migOps)
	} else {
		resp = patched(ctx, req, append(migOps, a.mutations(pod)...))
	}
	if resp.Allowed {
		resp.Warnings = append(resp.Warnings, a.migWarnings(ctx, profile)...)
		if w := a.podGroupWarning(ctx, pod); w != "" {
			resp.Warnings = append(resp.Warnings, w)
		}
	}
	return resp
}

// patched admits the request with the patch ops, or unchanged when there
// are none.
func patched(ctx context.Context, req *admissionv1.AdmissionRequest, ops []patchOp) *admissionv1.AdmissionResponse {
	if len(ops) == 0 {
		return allowed(req)
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		// Unreachable with string values; answered rather than panicking.
		return internalError(req, "encoding the patch: "+err.Error())
	}
	klog.FromContext(ctx).V(2).Info("Mutating GPU workload", "kind", req.Kind.Kind, "operations", len(ops))
	patchType := admissionv1.PatchTypeJSONPatch
	return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true, Patch: patch, PatchType: &patchType}
}

// mutations returns the JSON patch that normalises the pod, empty when it
// needs none. Applying it and mutating again yields no patch.
func (a *Admitter) mutations(pod *corev1.Pod) []patchOp {
	ops := a.templateMutations(podTemplateOf(pod))
	if !a.podAsks(&pod.Spec) {
		return ops
	}
	ops = append(ops, schedulerMutations(pod, a.cfg.SchedulerName)...)
	return append(ops, a.fitGateMutations(pod, schedulerOf(pod, a.cfg.SchedulerName))...)
}

// schedulerOf returns the scheduler the pod is handed to: scheduler when
// it names no scheduler or the default one; else its own, since its owner
// chose.
func schedulerOf(pod *corev1.Pod, scheduler string) string {
	switch pod.Spec.SchedulerName {
	case "", corev1.DefaultSchedulerName:
		return scheduler
	}
	return pod.Spec.SchedulerName
}

// schedulerMutations returns the patch that hands the pod to scheduler
// when it names no scheduler or the default one (schedulerOf).
func schedulerMutations(pod *corev1.Pod, scheduler string) []patchOp {
	if s := schedulerOf(pod, scheduler); s != pod.Spec.SchedulerName {
		return []patchOp{{Op: "add", Path: pointer("spec", "schedulerName"), Value: s}}
	}
	return nil
}

// templateMutations returns the patch that gives a pod, or a Job's pod
// template, its GPU counts and, when it asks for GPUs, its quota totals.
func (a *Admitter) templateMutations(t podTemplate) []patchOp {
	var ops []patchOp
	for i := range t.spec.InitContainers {
		ops = append(ops, a.countMutations(t, "initContainers", i, &t.spec.InitContainers[i])...)
	}
	for i := range t.spec.Containers {
		ops = append(ops, a.countMutations(t, "containers", i, &t.spec.Containers[i])...)
	}
	if !a.podAsks(t.spec) {
		return ops
	}
	counted := t
	counted.spec = a.withCounts(t.spec)
	return append(ops, a.quotaMutations(counted)...)
}

// countMutations adds a GPU count of 1 to a container that asks for a slice
// but no count. Extended resources live in limits (the API server copies
// them into requests), so the count goes into limits; it also goes into
// requests when the container lists GPU resources there, since the API
// server requires the two to agree.
func (a *Admitter) countMutations(t podTemplate, list string, i int, c *corev1.Container) []patchOp {
	u := a.useOf(c)
	if !u.slice || u.count {
		return nil
	}
	names := a.cfg.ResourceNames
	count := string(names.Count)
	path := func(tokens ...string) string {
		return t.pointer(append([]string{"spec", list, index(i), "resources"}, tokens...)...)
	}
	var ops []patchOp
	if c.Resources.Limits == nil {
		ops = append(ops, patchOp{Op: "add", Path: path("limits"), Value: map[string]string{count: "1"}})
	} else {
		ops = append(ops, patchOp{Op: "add", Path: path("limits", count), Value: "1"})
	}
	for _, name := range []corev1.ResourceName{names.Memory, names.MemoryPercentage, names.Cores} {
		if _, ok := c.Resources.Requests[name]; ok {
			ops = append(ops, patchOp{Op: "add", Path: path("requests", count), Value: "1"})
			break
		}
	}
	return ops
}
