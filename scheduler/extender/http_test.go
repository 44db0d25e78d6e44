package extender

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/scheduler/metrics"
)

func TestHTTP(t *testing.T) {
	validFilter, _ := json.Marshal(extenderv1.ExtenderArgs{
		Pod:       podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=1000"),
		NodeNames: &[]string{"a100-1", "t4"},
	})
	validPod, _ := json.Marshal(podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=1000"))
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
		wantBody   string // words in the answer
		verb       string // request counted under verb and result
		result     string
	}{
		{name: "filter", method: "POST", path: "/filter", body: string(validFilter), wantStatus: 200, wantBody: `"NodeNames":["a100-1","t4"]`, verb: metrics.VerbFilter, result: metrics.ResultSuccess},
		{name: "filter field names in any case", method: "POST", path: "/filter", body: strings.ToLower(string(validFilter)), wantStatus: 200, wantBody: `"NodeNames":["a100-1","t4"]`, verb: metrics.VerbFilter, result: metrics.ResultSuccess},
		{name: "prioritize", method: "POST", path: "/prioritize", body: string(validFilter), wantStatus: 200, wantBody: `"Host":"a100-1"`, verb: metrics.VerbPrioritize, result: metrics.ResultSuccess},
		{name: "malformed JSON", method: "POST", path: "/filter", body: `{"Pod": {`, wantStatus: 400, wantBody: "request body is not a valid JSON ExtenderArgs", verb: metrics.VerbFilter, result: metrics.ResultInvalid},
		{name: "empty body", method: "POST", path: "/bind", body: "", wantStatus: 400, wantBody: "request body is empty: want a JSON ExtenderBindingArgs", verb: metrics.VerbBind, result: metrics.ResultInvalid},
		{name: "oversized body", method: "POST", path: "/filter", body: `{"NodeNames":["` + strings.Repeat("a", MaxRequestBytes) + `"]}`, wantStatus: 400, wantBody: "larger than the limit of 10485760 bytes", verb: metrics.VerbFilter, result: metrics.ResultInvalid},
		{name: "data after the object", method: "POST", path: "/prioritize", body: string(validFilter) + `{}`, wantStatus: 400, wantBody: "request body has more after the JSON ExtenderArgs", verb: metrics.VerbPrioritize, result: metrics.ResultInvalid},
		{name: "wrong type of a field", method: "POST", path: "/bind", body: `{"PodName": 7}`, wantStatus: 400, wantBody: "PodName", verb: metrics.VerbBind, result: metrics.ResultInvalid},
		{name: "nonsense quantity", method: "POST", path: "/filter", body: `{"Pod":{"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpumem":"lots"}}}]}},"NodeNames":["t4"]}`, wantStatus: 400, wantBody: "quantities must match the regular expression", verb: metrics.VerbFilter, result: metrics.ResultInvalid},
		{name: "negative quantity", method: "POST", path: "/filter", body: `{"Pod":{"metadata":{"name":"p","namespace":"ns"},"spec":{"containers":[{"name":"c","resources":{"limits":{"nvidia.com/gpumem":"-5"}}}]}},"NodeNames":["t4"]}`, wantStatus: 200, wantBody: `Invalid value: \"-5\": must be at least 1`, verb: metrics.VerbFilter, result: metrics.ResultInvalid},
		{name: "bind of an unknown pod", method: "POST", path: "/bind", body: `{"PodName":"ghost","PodNamespace":"ns","PodUID":"u","Node":"a100-1"}`, wantStatus: 200, wantBody: `pods \"ghost\" not found`, verb: metrics.VerbBind, result: metrics.ResultInvalid},
		{name: "filter with a null body", method: "POST", path: "/filter", body: "null", wantStatus: 400, wantBody: "Pod: Required value", verb: metrics.VerbFilter, result: metrics.ResultInvalid},
		{name: "filter without a pod", method: "POST", path: "/filter", body: `{"NodeNames":["t4"]}`, wantStatus: 400, wantBody: "Pod: Required value", verb: metrics.VerbFilter, result: metrics.ResultInvalid},
		{name: "prioritize with a null body", method: "POST", path: "/prioritize", body: "null", wantStatus: 400, wantBody: "Pod: Required value", verb: metrics.VerbPrioritize, result: metrics.ResultInvalid},
		{name: "bind of a 1 MB node name", method: "POST", path: "/bind", body: `{"PodName":"p","PodNamespace":"ns","PodUID":"u","Node":"` + strings.Repeat("n", 1<<20) + `"}`, wantStatus: 200, wantBody: "Node: Too long: may not be more than 253 bytes", verb: metrics.VerbBind, result: metrics.ResultInvalid},
		{name: "GET is not allowed", method: "GET", path: "/filter", wantStatus: 405},
		{name: "preempt", method: "POST", path: "/preempt", body: `{"Pod":` + string(validPod) + `,"NodeNameToMetaVictims":{"t4":{"Pods":[{"UID":"u"}],"NumPDBViolations":0}}}`, wantStatus: 200, wantBody: `"NodeNameToMetaVictims":{"t4":{"Pods":[{"UID":"u"}],"NumPDBViolations":0}}`, verb: metrics.VerbPreempt, result: metrics.ResultSuccess},
		{name: "preempt with a null body", method: "POST", path: "/preempt", body: "null", wantStatus: 400, wantBody: "Pod: Required value", verb: metrics.VerbPreempt, result: metrics.ResultInvalid},
		{name: "unknown verb", method: "POST", path: "/unknown", body: "{}", wantStatus: 404},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			registry := prometheus.NewRegistry()
			var err error
			if f.ext.Metrics, err = metrics.NewRequests(registry); err != nil {
				t.Fatal(err)
			}
			mux := http.NewServeMux()
			f.ext.Register(mux)
			server := httptest.NewServer(mux)
			defer server.Close()
			before := [][]int64{f.usage("a100-1"), f.usage("t4")}

			req, _ := http.NewRequestWithContext(t.Context(), tc.method, server.URL+tc.path, strings.NewReader(tc.body))
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus || !bytes.Contains(body, []byte(tc.wantBody)) {
				t.Errorf("answer %d %.300s, want %d with %q", resp.StatusCode, body, tc.wantStatus, tc.wantBody)
			}
			// No answer echoes what it was sent at length.
			if len(body) > 1024 {
				t.Errorf("answer is %d bytes long, want at most 1024: %.300s...", len(body), body)
			}
			if tc.wantStatus != 404 && tc.wantStatus != 405 && resp.Header.Get("Content-Type") != "application/json" {
				t.Errorf("content type %q", resp.Header.Get("Content-Type"))
			}
			if after := [][]int64{f.usage("a100-1"), f.usage("t4")}; !reflect.DeepEqual(after, before) {
				t.Errorf("the request changed the view: %v, was %v", after, before)
			}
			if tc.verb != "" {
				if n := testutil.ToFloat64(f.ext.Metrics.Total.WithLabelValues(tc.verb, tc.result)); n != 1 {
					t.Errorf("requests_total{verb=%s,result=%s} = %v, want 1", tc.verb, tc.result, n)
				}
				if n := testutil.CollectAndCount(f.ext.Metrics.Duration); n != 1 {
					t.Errorf("%d latency series, want 1", n)
				}
			}
		})
	}
}

// TestReusedMemoryAnswersAsFresh sends filter and prioritize calls of
// different pods and nodes one after another, so that each reuses what the
// one before left, and checks each answer against a call with fresh memory.
func TestReusedMemoryAnswersAsFresh(t *testing.T) {
	f := newFixture(t)
	f.place("busy", "uid-busy", "a100-1-gpu0", 40000, 40)
	mux := http.NewServeMux()
	f.ext.Register(mux)
	pods := []*corev1.Pod{
		podSpec("small", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000"),
		podSpec("big", nil, "nvidia.com/gpu=2", "nvidia.com/gpumem=50000"),
		podSpec("none", nil, "cpu=1"),
		podSpec("t4", map[string]string{"nvidia.com/use-gputype": "T4"}, "nvidia.com/gpu=1"),
	}
	lists := [][]string{
		{"a100-1", "a100-2", "t4", "stale", "notready", "no-gpunode"},
		{"t4"},
		{},
		{"a100-2", "a100-1"},
	}
	for i := range 3 * len(pods) * len(lists) {
		args := &extenderv1.ExtenderArgs{Pod: pods[i%len(pods)], NodeNames: &lists[i/len(pods)%len(lists)]}
		body, err := json.Marshal(args)
		if err != nil {
			t.Fatal(err)
		}
		wantFilter, _ := f.filter(args)
		wantScores, _, err := f.prioritize(args)
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]any{"/filter": wantFilter, "/prioritize": wantScores} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
			got := reflect.New(reflect.TypeOf(want)).Interface()
			if err := json.Unmarshal(rec.Body.Bytes(), got); err != nil {
				t.Fatalf("call %d %s answered %q: %v", i, path, rec.Body, err)
			}
			if got := reflect.ValueOf(got).Elem().Interface(); !reflect.DeepEqual(got, want) {
				t.Errorf("call %d %s answered %+v, a fresh call %+v", i, path, got, want)
			}
		}
	}
}
