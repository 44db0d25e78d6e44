package admission

import (
	"bytes"
	"errors"
	"fmt"

	admissionv1 "k8s.io/api/admission/v1"
	sigsjson "sigs.k8s.io/json"
)

// reviewAPIVersion and reviewKind are the only AdmissionReview the webhook
// speaks; its configurations list admissionReviewVersions [v1].
const (
	reviewAPIVersion = "admission.k8s.io/v1"
	reviewKind       = "AdmissionReview"
)

// DecodeReview reads an AdmissionReview v1 from a request body. The error
// says what is wrong with the body, for the HTTP 400 answer.
func DecodeReview(body []byte) (*admissionv1.AdmissionReview, error) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, errors.New("the body is empty: expected an admission.k8s.io/v1 AdmissionReview")
	}
	review := &admissionv1.AdmissionReview{}
	// Case-sensitive, as kube-apiserver decodes: "UID" is not "uid".
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(body, review); err != nil {
		return nil, fmt.Errorf("decoding the AdmissionReview: %w", err)
	}
	if review.APIVersion != reviewAPIVersion || review.Kind != reviewKind {
		return nil, fmt.Errorf("expected apiVersion %q and kind %q, got apiVersion %q and kind %q",
			reviewAPIVersion, reviewKind, review.APIVersion, review.Kind)
	}
	if review.Request == nil {
		return nil, errors.New("the AdmissionReview has no request")
	}
	if review.Request.UID == "" {
		return nil, errors.New("the AdmissionReview's request.uid is empty")
	}
	return review, nil
}
