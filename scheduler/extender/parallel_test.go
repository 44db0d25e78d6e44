package extender

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// TestWorkersAnswerAsOne filters and scores 2,000 nodes, some full, with
// one worker and with four: the answers must be the same to the byte, in
// the order kube-scheduler asked.
func TestWorkersAnswerAsOne(t *testing.T) {
	v, names := scaleView(t, 2000, 16000)
	answers := map[int][2][]byte{}
	for _, workers := range []int{1, 4} {
		ext := New(Config{
			View: v, Clock: clock.RealClock{},
			ResourceNames:     gpurequest.DefaultResourceNames(),
			DefaultNodePolicy: gpurequest.Binpack, DefaultGPUPolicy: gpurequest.Spread,
			HeartbeatMaxAge: time.Hour, Workers: workers,
		})
		mux := http.NewServeMux()
		ext.Register(mux)
		post := func(path string, names []string) []byte {
			body, err := json.Marshal(&extenderv1.ExtenderArgs{Pod: probePod(), NodeNames: &names})
			if err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body)))
			if rec.Code != http.StatusOK {
				t.Fatalf("%s answered %d: %s", path, rec.Code, rec.Body)
			}
			return rec.Body.Bytes()
		}
		filtered := post("/filter", names)
		var result extenderv1.ExtenderFilterResult
		if err := json.Unmarshal(filtered, &result); err != nil || result.NodeNames == nil {
			t.Fatalf("filter answered %s (%v)", filtered, err)
		}
		if len(*result.NodeNames) == len(names) || len(result.FailedNodes) == 0 {
			t.Fatalf("%d workers: %d of %d nodes feasible, %d failed: the test needs both", workers, len(*result.NodeNames), len(names), len(result.FailedNodes))
		}
		answers[workers] = [2][]byte{filtered, post("/prioritize", names)}
	}
	for i, verb := range []string{"filter", "prioritize"} {
		if !bytes.Equal(answers[1][i], answers[4][i]) {
			t.Errorf("%s answers differ between one worker and four:\n%.400s\n%.400s", verb, answers[1][i], answers[4][i])
		}
	}
}
