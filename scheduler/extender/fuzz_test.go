package extender

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// FuzzRequests sends arbitrary bodies to every verb. Whatever the body, the
// extender answers with a JSON body, never panics, and a filter or
// prioritize never changes the view.
func FuzzRequests(f *testing.F) {
	seed, _ := json.Marshal(extenderv1.ExtenderArgs{
		Pod:       podSpec("p", map[string]string{"tessera.dev/gpu-type": "a100", "tessera.dev/numa-bind": "true"}, "nvidia.com/gpu=2", "nvidia.com/gpumem=1000", "nvidia.com/gpucores=30"),
		NodeNames: &[]string{"a100-1", "t4", "stale", "absent"},
	})
	bind, _ := json.Marshal(extenderv1.ExtenderBindingArgs{PodName: "p", PodNamespace: "ns", PodUID: "uid-p", Node: "a100-1"})
	for _, s := range [][]byte{seed, bind, []byte(`{}`), []byte(`null`), []byte(``), []byte(`{"Pod":{"spec":{"containers":[{"resources":{"limits":{"nvidia.com/gpumem-percentage":"101"}}}]}}}`)} {
		for verb := range uint8(3) {
			f.Add(verb, s)
		}
	}
	fx := newFixture(&testing.T{})
	mux := http.NewServeMux()
	fx.ext.Register(mux)
	f.Fuzz(func(t *testing.T, verb uint8, body []byte) {
		path := []string{"/filter", "/prioritize", "/bind"}[verb%3]
		before := [][]int64{fx.usage("a100-1"), fx.usage("t4")}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s answered %d", path, rec.Code)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s answered with invalid JSON: %q", path, rec.Body.String())
		}
		if path != "/bind" && !reflect.DeepEqual([][]int64{fx.usage("a100-1"), fx.usage("t4")}, before) {
			t.Fatalf("%s changed the view", path)
		}
	})
}
