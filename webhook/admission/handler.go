package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// DefaultMaxRequestBytes bounds an AdmissionReview body. The API server
// refuses objects over 3 MiB, and a pod creation carries one object.
const DefaultMaxRequestBytes = 6 << 20

// ReviewFunc answers one admission request.
type ReviewFunc func(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse

// Handler serves one webhook, such as Admitter.Mutate, over HTTP: it reads
// an AdmissionReview v1, answers it with the ReviewFunc, and counts and
// times the answer. A body it cannot read gets an HTTP error that says why.
type Handler struct {
	name     string
	review   ReviewFunc
	maxBytes int64
	metrics  *Metrics
	clock    clock.PassiveClock
}

var _ http.Handler = (*Handler)(nil)

// NewHandler returns the handler of the webhook called name (WebhookMutate
// or WebhookValidate), which refuses bodies over maxBytes.
func NewHandler(name string, review ReviewFunc, maxBytes int64, metrics *Metrics, clk clock.PassiveClock) *Handler {
	return &Handler{name: name, review: review, maxBytes: maxBytes, metrics: metrics, clock: clk}
}

// ServeHTTP answers one AdmissionReview.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := h.clock.Now()
	result, warnings := h.serve(w, r)
	h.metrics.observe(h.name, result, h.clock.Since(start), warnings)
}

func (h *Handler) serve(w http.ResponseWriter, r *http.Request) (result string, warnings int) {
	logger := klog.FromContext(r.Context()).WithValues("webhook", h.name)
	fail := func(code int, format string, args ...any) (string, int) {
		msg := fmt.Sprintf(format, args...)
		logger.V(2).Info("Rejecting admission request", "status", code, "reason", msg)
		http.Error(w, msg, code)
		return ResultBadRequest, 0
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return fail(http.StatusMethodNotAllowed, "method %s not allowed: POST an admission.k8s.io/v1 AdmissionReview", r.Method)
	}
	if mediaType, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mediaType != "application/json" {
		return fail(http.StatusUnsupportedMediaType, "Content-Type must be application/json, got %q", r.Header.Get("Content-Type"))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBytes))
	if err != nil {
		if maxErr := (*http.MaxBytesError)(nil); errors.As(err, &maxErr) {
			return fail(http.StatusRequestEntityTooLarge, "the body is larger than the limit of %d bytes", h.maxBytes)
		}
		return fail(http.StatusBadRequest, "reading the body: %v", err)
	}
	review, err := DecodeReview(body)
	if err != nil {
		return fail(http.StatusBadRequest, "%v", err)
	}
	req := review.Request
	logger = logger.WithValues("uid", req.UID, "kind", req.Kind.Kind, "object", klog.KRef(req.Namespace, req.Name))
	resp := h.review(klog.NewContext(r.Context(), logger), req)
	resp.UID = req.UID
	out, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: reviewAPIVersion, Kind: reviewKind},
		Response: resp,
	})
	if err != nil {
		logger.Error(err, "Encoding the AdmissionReview response")
		http.Error(w, "encoding the response: "+err.Error(), http.StatusInternalServerError)
		return ResultError, 0
	}
	w.Header().Set("Content-Type", "application/json")
	if _, err := w.Write(out); err != nil {
		logger.V(2).Info("Writing the AdmissionReview response failed", "err", err)
	}
	return resultOf(resp), len(resp.Warnings)
}

func resultOf(resp *admissionv1.AdmissionResponse) string {
	switch {
	case resp.Allowed && len(resp.Patch) > 0:
		return ResultPatched
	case resp.Allowed:
		return ResultAllowed
	case resp.Result != nil && resp.Result.Reason == metav1.StatusReasonBadRequest:
		return ResultBadRequest
	case resp.Result != nil && resp.Result.Code >= http.StatusInternalServerError:
		return ResultError
	default:
		return ResultDenied
	}
}
