package admission

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"
)

// A batch/v1 Job is counted by Kueue from its pod template, before any pod
// exists, so in extender mode the webhook writes the template's GPU counts
// and quota totals as it does a pod's (templateMutations), and refuses a
// template whose pods it would refuse or whose totals are not its own.
//
// A Job's template is immutable but for a suspended Job's scheduling
// directives and, since Kubernetes 1.36 (MutablePodResourcesForSuspendedJobs),
// its containers' resources. An update that changes the resources is
// mutated and validated as a creation is, so that Kueue counts what the
// new resources total; any other update (Kueue suspending, resuming or
// placing the Job) is let through unchanged: a patch of the resources
// there would be refused as a change to an immutable field, as for a Job
// created before the webhook counted Jobs.
//
// CronJobs are not reviewed: neither Kueue nor ResourceQuota counts a
// CronJob, and each Job it creates passes through this review.

var (
	jobKind     = metav1.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	jobResource = metav1.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

// reviewsJob reports whether the request is for a Job, which the webhook
// reviews by its pod template.
func reviewsJob(req *admissionv1.AdmissionRequest) bool {
	return req.Resource == jobResource
}

// mutateJob answers the mutating webhook for a Job: in extender mode its
// pod template gets the counts and quota totals a pod would. In DRA mode
// the Job is left alone: its pods become claims when they are created.
func (a *Admitter) mutateJob(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	job, resp := a.jobUnderReview(ctx, req)
	if resp != nil {
		return resp
	}
	mode, ferr := a.modeOf(req.Namespace)
	if ferr != nil {
		return denied(req, job.Name, []refusal{{err: ferr}})
	}
	if mode != ModeExtender {
		return allowed(req)
	}
	t, migOps, refusals := a.migMutations(jobTemplateOf(job))
	if len(refusals) > 0 {
		return denied(req, job.Name, refusals)
	}
	return patched(ctx, req, append(migOps, a.templateMutations(t)...))
}

// validateJob answers the validating webhook for a Job: in extender mode
// it refuses a template whose pods the webhook would refuse, naming the
// field under spec.template, whose quota totals are not those the
// mutation writes, or whose slices state no compute under a quota on
// compute, and warns about a request no GPU of the cluster can
// serve; in either mode it warns about a Kueue queue the Job names that
// Kueue will not manage. Its namespace's ResourceQuota is not checked: a Job waits in its
// queue for room, and its pods are checked when they are created.
func (a *Admitter) validateJob(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	job, resp := a.jobUnderReview(ctx, req)
	if resp != nil {
		return resp
	}
	t := jobTemplateOf(job)
	resp = allowed(req)
	// The mutation refused a bad mode label already.
	if mode, ferr := a.modeOf(req.Namespace); ferr == nil && mode == ModeExtender {
		resp = a.validated(ctx, req, job.Name, t, func() []refusal {
			return append(a.quotaMismatches(t), a.quotaUnstated(ctx, req.Namespace, t)...)
		})
	}
	return a.withQueueWarning(ctx, req, resp, kueueJob, &job.ObjectMeta, t.spec)
}

// jobUnderReview returns the Job the request creates, or updates with new
// container resources, or the response to send as is.
func (a *Admitter) jobUnderReview(ctx context.Context, req *admissionv1.AdmissionRequest) (*batchv1.Job, *admissionv1.AdmissionResponse) {
	logger := klog.FromContext(ctx)
	if req.Kind != jobKind {
		return nil, badRequest(req, "the Tessera webhook reviews jobs as batch/v1 Jobs, got kind %q", kindString(req.Kind))
	}
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" {
		logger.V(4).Info("Not a Job creation or update, admitting unchanged", "operation", req.Operation, "subResource", req.SubResource)
		return nil, allowed(req)
	}
	job, err := decodeJob(req.Object.Raw, "request.object")
	if err != nil {
		return nil, badRequest(req, "%v", err)
	}
	if req.Operation == admissionv1.Update {
		old, err := decodeJob(req.OldObject.Raw, "request.oldObject")
		if err != nil {
			return nil, badRequest(req, "%v", err)
		}
		if !resourcesChanged(&old.Spec.Template.Spec, &job.Spec.Template.Spec) {
			logger.V(4).Info("Job update leaves its containers' resources, admitting unchanged")
			return nil, allowed(req)
		}
	}
	if why := a.optedOut(ctx, req.Namespace, job.Labels, job.Spec.Template.Labels); why != "" {
		logger.V(4).Info("Opted out, admitting unchanged", "reason", why)
		return nil, allowed(req)
	}
	return job, nil
}

// decodeJob decodes the Job in raw, the request's field name.
func decodeJob(raw []byte, name string) (*batchv1.Job, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("the AdmissionReview's %s is empty: expected the Job", name)
	}
	job := &batchv1.Job{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, job); err != nil {
		return nil, fmt.Errorf("decoding %s as a batch/v1 Job: %w", name, err)
	}
	return job, nil
}

// resourcesChanged reports whether an update of a pod template changes
// the resources of any of its containers.
func resourcesChanged(old, updated *corev1.PodSpec) bool {
	if len(old.InitContainers) != len(updated.InitContainers) || len(old.Containers) != len(updated.Containers) {
		return true
	}
	for i := range old.InitContainers {
		if !equality.Semantic.DeepEqual(old.InitContainers[i].Resources, updated.InitContainers[i].Resources) {
			return true
		}
	}
	for i := range old.Containers {
		if !equality.Semantic.DeepEqual(old.Containers[i].Resources, updated.Containers[i].Resources) {
			return true
		}
	}
	return false
}
