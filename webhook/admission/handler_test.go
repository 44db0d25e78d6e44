package admission

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func newTestHandler(t testing.TB, name string) (*Handler, *Metrics) {
	t.Helper()
	a := newAdmitter(t, DefaultConfig(), gpuNode("node-1", 100, 81920))
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	review := a.Mutate
	if name == WebhookValidate {
		review = a.Validate
	}
	return NewHandler(name, review, DefaultMaxRequestBytes, m, clocktesting.NewFakePassiveClock(ptr.To(metav1.Now()).Time)), m
}

func reviewBody(t testing.TB, req *admissionv1.AdmissionRequest) []byte {
	t.Helper()
	raw, err := json.Marshal(&admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func serve(h http.Handler, method, contentType string, body []byte) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, "/mutate", bytes.NewReader(body))
	if contentType != "" {
		r.Header.Set("Content-Type", contentType)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestHandlerRejectsBadBodies(t *testing.T) {
	good := reviewBody(t, createRequest(t, pod(limited("main", "nvidia.com/gpumem", "4000"))))
	tests := []struct {
		name        string
		method      string
		contentType string
		body        []byte
		wantStatus  int
		wantText    string
	}{
		{"GET is not allowed", http.MethodGet, "application/json", nil, http.StatusMethodNotAllowed, "method GET not allowed"},
		{"content type must be JSON", http.MethodPost, "application/yaml", good, http.StatusUnsupportedMediaType, `Content-Type must be application/json, got "application/yaml"`},
		{"missing content type", http.MethodPost, "", good, http.StatusUnsupportedMediaType, `Content-Type must be application/json, got ""`},
		{"empty body", http.MethodPost, "application/json", nil, http.StatusBadRequest, "the body is empty"},
		{"malformed JSON", http.MethodPost, "application/json", []byte(`{"apiVersion":`), http.StatusBadRequest, "decoding the AdmissionReview"},
		{"JSON that is not an object", http.MethodPost, "application/json", []byte(`[1,2]`), http.StatusBadRequest, "decoding the AdmissionReview"},
		{
			"older AdmissionReview version", http.MethodPost, "application/json",
			bytes.Replace(good, []byte(`admission.k8s.io/v1"`), []byte(`admission.k8s.io/v1beta1"`), 1),
			http.StatusBadRequest, `expected apiVersion "admission.k8s.io/v1" and kind "AdmissionReview", got apiVersion "admission.k8s.io/v1beta1"`,
		},
		{
			"another kind of object", http.MethodPost, "application/json", []byte(`{"apiVersion":"v1","kind":"Pod"}`),
			http.StatusBadRequest, `got apiVersion "v1" and kind "Pod"`,
		},
		{"review without a request", http.MethodPost, "application/json", []byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`), http.StatusBadRequest, "has no request"},
		{
			"request without a uid", http.MethodPost, "application/json",
			[]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}`),
			http.StatusBadRequest, "request.uid is empty",
		},
		{
			"huge body", http.MethodPost, "application/json; charset=utf-8",
			append(append([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","x":"`), bytes.Repeat([]byte("a"), DefaultMaxRequestBytes)...), '"', '}'),
			http.StatusRequestEntityTooLarge, "the body is larger than the limit of 6291456 bytes",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, m := newTestHandler(t, WebhookMutate)
			w := serve(h, tc.method, tc.contentType, tc.body)
			if w.Code != tc.wantStatus {
				t.Errorf("status = %d, want %d (body %q)", w.Code, tc.wantStatus, w.Body.String())
			}
			if !strings.Contains(w.Body.String(), tc.wantText) {
				t.Errorf("body = %q, want it to contain %q", w.Body.String(), tc.wantText)
			}
			if got := testutil.ToFloat64(m.requests.WithLabelValues(WebhookMutate, ResultBadRequest)); got != 1 {
				t.Errorf("bad_request count = %v, want 1", got)
			}
		})
	}
}

func TestHandlerAnswersUnreadableRequests(t *testing.T) {
	statefulSet := func() *admissionv1.AdmissionRequest {
		r := createRequest(t, pod())
		r.Kind = metav1.GroupVersionKind{Group: "apps", Version: "v1", Kind: "StatefulSet"}
		r.Resource = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
		return r
	}
	withObject := func(raw string) *admissionv1.AdmissionRequest {
		r := createRequest(t, pod())
		r.Object = runtime.RawExtension{}
		if raw != "" {
			r.Object.Raw = []byte(raw)
		}
		return r
	}
	tests := []struct {
		name    string
		req     *admissionv1.AdmissionRequest
		message string
	}{
		{
			name: "wrong kind",
			req:  statefulSet(),
			message: `the Tessera webhook reviews only v1 pods, batch/v1 Jobs and, to validate them, apps/v1 Deployments, got kind "apps/v1, Kind=StatefulSet" of resource "apps/v1/statefulsets": ` +
				`the webhook configuration's rules must select only those`,
		},
		{name: "no object", req: withObject(""), message: "the AdmissionReview's request.object is empty: expected the pod being created"},
		{name: "object that is not a pod", req: withObject(`{"spec":"gpu"}`), message: "decoding request.object as a v1 Pod: json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec"},
	}
	for _, tc := range tests {
		for _, name := range []string{WebhookMutate, WebhookValidate} {
			t.Run(tc.name+"/"+name, func(t *testing.T) {
				h, m := newTestHandler(t, name)
				w := serve(h, http.MethodPost, "application/json", reviewBody(t, tc.req))
				if w.Code != http.StatusOK {
					t.Fatalf("status = %d, want 200 with a refusal (body %q)", w.Code, w.Body.String())
				}
				resp := decodeResponse(t, w)
				if resp.Allowed || resp.Result == nil || resp.Result.Code != http.StatusBadRequest {
					t.Fatalf("response = %+v, want a 400 refusal", resp)
				}
				if resp.Result.Message != tc.message {
					t.Errorf("message:\n got: %s\nwant: %s", resp.Result.Message, tc.message)
				}
				if got := testutil.ToFloat64(m.requests.WithLabelValues(name, ResultBadRequest)); got != 1 {
					t.Errorf("bad_request count = %v, want 1", got)
				}
			})
		}
	}
}

func TestHandlerAnswersReviews(t *testing.T) {
	tests := []struct {
		name        string
		webhook     string
		req         *admissionv1.AdmissionRequest
		wantAllowed bool
		wantPatch   bool
		wantResult  string
	}{
		{"mutation patches a GPU pod", WebhookMutate, createRequest(t, pod(limited("main", "nvidia.com/gpumem", "4000"))), true, true, ResultPatched},
		{"mutation admits a pod without GPUs", WebhookMutate, createRequest(t, pod(limited("main", "cpu", "1"))), true, false, ResultAllowed},
		{"validation admits a valid GPU pod", WebhookValidate, createRequest(t, pod(limited("main", "nvidia.com/gpu", "1", "nvidia.com/gpumem", "4000", quotaGPUs, "1", quotaMemory, "4000"))), true, false, ResultAllowed},
		{"validation refuses an invalid GPU pod", WebhookValidate, createRequest(t, pod(limited("main", "nvidia.com/gpucores", "101"))), false, false, ResultDenied},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, m := newTestHandler(t, tc.webhook)
			w := serve(h, http.MethodPost, "application/json", reviewBody(t, tc.req))
			if w.Code != http.StatusOK {
				t.Fatalf("status = %d, body %q", w.Code, w.Body.String())
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
			resp := decodeResponse(t, w)
			if resp.UID != tc.req.UID {
				t.Errorf("UID = %q, want %q", resp.UID, tc.req.UID)
			}
			if resp.Allowed != tc.wantAllowed || (len(resp.Patch) > 0) != tc.wantPatch {
				t.Errorf("allowed=%v patch=%s, want allowed=%v patch=%v", resp.Allowed, resp.Patch, tc.wantAllowed, tc.wantPatch)
			}
			if got := testutil.ToFloat64(m.requests.WithLabelValues(tc.webhook, tc.wantResult)); got != 1 {
				t.Errorf("%s count = %v, want 1", tc.wantResult, got)
			}
			if got := testutil.CollectAndCount(m.duration); got == 0 {
				t.Error("no duration observed")
			}
		})
	}
}

func decodeResponse(t testing.TB, w *httptest.ResponseRecorder) *admissionv1.AdmissionResponse {
	t.Helper()
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(w.Body.Bytes(), &review); err != nil {
		t.Fatalf("decoding the answer %q: %v", w.Body.String(), err)
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" || review.Response == nil {
		t.Fatalf("answer is not an AdmissionReview v1 with a response: %s", w.Body.String())
	}
	return review.Response
}
