package admission

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
)

// FuzzAdmissionReview feeds arbitrary bodies to both webhooks. Whatever the
// body, the answer is an HTTP error exactly when DecodeReview refuses it,
// and otherwise an AdmissionReview for the same UID; a patch applies to the
// pod as the API server serialises it, and mutating the patched pod again
// changes nothing.
func FuzzAdmissionReview(f *testing.F) {
	seeds := []*corev1.Pod{
		pod(limited("main", "nvidia.com/gpumem", "4000")),
		pod(limited("main", "nvidia.com/gpu", "2", "nvidia.com/gpucores", "150")),
		pod(corev1.Container{Name: "main", Resources: corev1.ResourceRequirements{Requests: resources("nvidia.com/gpumem-percentage", "50")}}),
		pod(limited("main", "nvidia.com/gpu", "0")),
		pod(),
	}
	for _, p := range seeds {
		f.Add(reviewBody(f, createRequest(f, p)))
	}
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","kind":{"version":"v1","kind":"Pod"},"resource":{"version":"v1","resource":"pods"},"operation":"CREATE","object":{"spec":{"containers":[{"name":"a","resources":{"limits":null,"requests":{"nvidia.com/gpucores":"1"}}}]}}}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"1","object":7}}`))
	f.Add([]byte(`not json`))

	a := newAdmitter(f, DefaultConfig(), gpuNode("node-1", 100, 81920))
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		f.Fatal(err)
	}
	handlers := map[string]*Handler{
		WebhookMutate:   NewHandler(WebhookMutate, a.Mutate, 1<<20, m, clock.RealClock{}),
		WebhookValidate: NewHandler(WebhookValidate, a.Validate, 1<<20, m, clock.RealClock{}),
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		review, decodeErr := DecodeReview(body)
		for name, h := range handlers {
			w := serve(h, http.MethodPost, "application/json", body)
			if decodeErr != nil {
				if w.Code != http.StatusBadRequest && w.Code != http.StatusRequestEntityTooLarge {
					t.Fatalf("%s: undecodable body answered %d, want 400 or 413", name, w.Code)
				}
				continue
			}
			if w.Code != http.StatusOK {
				t.Fatalf("%s: decodable review answered %d: %s", name, w.Code, w.Body.String())
			}
			resp := decodeResponse(t, w)
			if resp.UID != review.Request.UID {
				t.Fatalf("%s: answer UID %q, want %q", name, resp.UID, review.Request.UID)
			}
			if len(resp.Patch) > 0 {
				checkPatchIsStable(t, a, review.Request, resp)
			}
		}
	})
}

func checkPatchIsStable(t *testing.T, a *Admitter, req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse) {
	var p corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &p); err != nil {
		t.Fatalf("patched a pod that does not decode: %v", err)
	}
	canonical, err := json.Marshal(&p)
	if err != nil {
		t.Fatal(err)
	}
	served := req.DeepCopy()
	served.Object = runtime.RawExtension{Raw: canonical}
	patched := applyPatch(t, served, resp)
	again := served.DeepCopy()
	again.Object = runtime.RawExtension{Raw: mustJSON(t, patched)}
	if second := a.Mutate(testContext(t), again); len(second.Patch) > 0 {
		t.Fatalf("mutating the patched pod patched again: %s", second.Patch)
	}
}

func mustJSON(t testing.TB, v any) []byte {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
