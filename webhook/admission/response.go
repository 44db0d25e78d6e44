package admission

import (
	"fmt"
	"net/http"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// refusal is one reason to refuse a pod: a field error and, when the field
// belongs to a container, that container's name.
type refusal struct {
	container string
	err       *field.Error
}

func (r refusal) String() string {
	if r.container == "" {
		return r.err.Error()
	}
	return fmt.Sprintf("container %q: %s", r.container, r.err.Error())
}

func allowed(req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{UID: req.UID, Allowed: true}
}

// badRequest answers a review the webhook cannot make sense of. The API
// server prefixes the message with the webhook's name.
func badRequest(req *admissionv1.AdmissionRequest, format string, args ...any) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{
		UID:     req.UID,
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusBadRequest,
			Reason:  metav1.StatusReasonBadRequest,
			Message: fmt.Sprintf(format, args...),
		},
	}
}

// denied refuses a pod or a Job. The message lists every reason; kubectl shows it
// after "admission webhook ... denied the request: ". The causes carry the
// same reasons for programs. Forbidden rather than Invalid: kubectl prints
// only the causes of an Invalid error, without saying a webhook refused.
func denied(req *admissionv1.AdmissionRequest, name string, refusals []refusal) *admissionv1.AdmissionResponse {
	msgs := make([]string, 0, len(refusals))
	causes := make([]metav1.StatusCause, 0, len(refusals))
	for _, r := range refusals {
		msgs = append(msgs, r.String())
		causes = append(causes, metav1.StatusCause{
			Type:    metav1.CauseType(r.err.Type),
			Field:   r.err.Field,
			Message: r.err.ErrorBody(),
		})
	}
	return &admissionv1.AdmissionResponse{
		UID:     req.UID,
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusForbidden,
			Reason:  metav1.StatusReasonForbidden,
			Message: strings.Join(msgs, "; "),
			Details: &metav1.StatusDetails{Kind: req.Resource.Resource, Name: name, Causes: causes},
		},
	}
}

// internalError answers a review the webhook could not complete.
func internalError(req *admissionv1.AdmissionRequest, msg string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{UID: req.UID, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonInternalError, Message: msg,
	}}
}
