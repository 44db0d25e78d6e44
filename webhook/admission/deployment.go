package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"
)

// An apps/v1 Deployment is reviewed by the validating webhook only, and
// only to warn about the Kueue queue it names (unmanagedQueue): Tessera
// changes nothing in it, since its pods are mutated and checked as they
// are created and Kueue counts them as pods. The warning is given on the
// Deployment because that is what a person creates and sees the answer
// to; a pod's warnings go to the ReplicaSet controller.

var (
	deploymentKind     = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
	deploymentResource = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// reviewsDeployment reports whether the request is for a Deployment.
func reviewsDeployment(req *admissionv1.AdmissionRequest) bool {
	return req.Resource == deploymentResource
}

// validateDeployment admits a Deployment, with a warning when it asks for
// GPUs and names a Kueue queue that Kueue will not manage.
func (a *Admitter) validateDeployment(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	logger := klog.FromContext(ctx)
	if req.Kind != deploymentKind {
		return badRequest(req, "the Tessera webhook reviews deployments as apps/v1 Deployments, got kind %q", kindString(req.Kind))
	}
	if (req.Operation != admissionv1.Create && req.Operation != admissionv1.Update) || req.SubResource != "" {
		logger.V(4).Info("Not a Deployment creation or update, admitting unchanged", "operation", req.Operation, "subResource", req.SubResource)
		return allowed(req)
	}
	if len(req.Object.Raw) == 0 {
		return badRequest(req, "the AdmissionReview's request.object is empty: expected the Deployment")
	}
	d := &appsv1.Deployment{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.Object.Raw, d); err != nil {
		return badRequest(req, "decoding request.object as an apps/v1 Deployment: %v", err)
	}
	if why := a.optedOut(ctx, req.Namespace, d.Labels, d.Spec.Template.Labels); why != "" {
		logger.V(4).Info("Opted out, admitting unchanged", "reason", why)
		return allowed(req)
	}
	return a.withQueueWarning(ctx, req, allowed(req), kueueDeployment, &d.ObjectMeta, &d.Spec.Template.Spec)
}
