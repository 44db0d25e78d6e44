package admission

import (
	"context"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	sigsjson "sigs.k8s.io/json"
)

var (
	podKind     = metav1.GroupVersionKind{Group: "", Version: "v1", Kind: "Pod"}
	podResource = metav1.GroupVersionResource{Group: "", Version: "v1", Resource: "pods"}
)

// podUnderReview returns the pod the request creates, or, when the webhook
// has nothing to decide, the response to send as is: a refusal for a
// request it cannot read, an admission for one it does not handle.
func (a *Admitter) podUnderReview(ctx context.Context, req *admissionv1.AdmissionRequest) (*corev1.Pod, *admissionv1.AdmissionResponse) {
	logger := klog.FromContext(ctx)
	if req.Kind != podKind || req.Resource != podResource {
		return nil, badRequest(req,
			"the Tessera webhook reviews only v1 pods, batch/v1 Jobs and, to validate them, apps/v1 Deployments, got kind %q of resource %q: the webhook configuration's rules must select only those",
			kindString(req.Kind), resourceString(req.Resource))
	}
	if req.Operation != admissionv1.Create || req.SubResource != "" {
		// Only the creation of a pod decides its GPUs; every other
		// operation is let through should a configuration route it here.
		logger.V(4).Info("Not a pod creation, admitting unchanged", "operation", req.Operation, "subResource", req.SubResource)
		return nil, allowed(req)
	}
	if len(req.Object.Raw) == 0 {
		return nil, badRequest(req, "the AdmissionReview's request.object is empty: expected the pod being created")
	}
	pod := &corev1.Pod{}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(req.Object.Raw, pod); err != nil {
		return nil, badRequest(req, "decoding request.object as a v1 Pod: %v", err)
	}
	if why := a.optedOut(ctx, req.Namespace, pod.Labels); why != "" {
		logger.V(4).Info("Opted out, admitting unchanged", "reason", why)
		return nil, allowed(req)
	}
	return pod, nil
}

func kindString(k metav1.GroupVersionKind) string {
	if k.Group == "" {
		return k.Version + ", Kind=" + k.Kind
	}
	return k.Group + "/" + k.Version + ", Kind=" + k.Kind
}

func resourceString(r metav1.GroupVersionResource) string {
	if r.Group == "" {
		return r.Version + "/" + r.Resource
	}
	return r.Group + "/" + r.Version + "/" + r.Resource
}
