package requeue

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

const window = 30 * time.Second

func testPod(name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)}}
}

// servedBy is a pod's Serves that the named nodes could take it.
func servedBy(nodes ...string) func(*placement.Fitter, string) bool {
	return func(_ *placement.Fitter, node string) bool { return slices.Contains(nodes, node) }
}

// freedAfter has pod a turned away and GPUs freed on n1 d later.
func freedAfter(d time.Duration) func(r *Requeuer, clk *clocktesting.FakeClock, drain func()) {
	return func(r *Requeuer, clk *clocktesting.FakeClock, _ func()) {
		r.Rejected(testPod("a"), nil)
		clk.Step(d)
		r.Freed("n1")
	}
}

func TestRequeuer(t *testing.T) {
	tests := []struct {
		name string
		run  func(r *Requeuer, clk *clocktesting.FakeClock, drain func())
		want []string // pods poked
	}{
		{
			name: "a pod turned away is poked when GPUs are freed",
			run:  freedAfter(time.Second),
			want: []string{"a"},
		},
		{
			name: "a pod turned away before the window is left to kube-scheduler",
			run:  freedAfter(window + time.Second),
		},
		{
			name: "a pod is poked once per time it is turned away",
			run: func(r *Requeuer, clk *clocktesting.FakeClock, drain func()) {
				r.Rejected(testPod("a"), nil)
				r.Freed("n1")
				clk.Step(time.Second)
				r.Freed("n1")
			},
			want: []string{"a"},
		},
		{
			name: "a pod turned away again is poked again",
			run: func(r *Requeuer, clk *clocktesting.FakeClock, drain func()) {
				r.Rejected(testPod("a"), nil)
				r.Freed("n1")
				drain()
				clk.Step(time.Second)
				r.Rejected(testPod("a"), nil)
				r.Freed("n1")
			},
			want: []string{"a", "a"},
		},
		{
			name: "a bound or deleted pod is not poked",
			run: func(r *Requeuer, clk *clocktesting.FakeClock, drain func()) {
				r.Rejected(testPod("a"), nil)
				r.Rejected(testPod("b"), nil)
				r.Forget("uid-a")
				r.Freed("n1")
			},
			want: []string{"b"},
		},
		{
			name: "only the pods the freed node could take are poked",
			run: func(r *Requeuer, clk *clocktesting.FakeClock, drain func()) {
				r.Rejected(testPod("a"), servedBy("n2"))
				r.Rejected(testPod("b"), servedBy("n1", "n2"))
				r.Freed("n1")
			},
			want: []string{"b"},
		},
		{
			name: "nothing is poked without a rejection",
			run:  func(r *Requeuer, clk *clocktesting.FakeClock, drain func()) { r.Freed("n1") },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			kube := kubefake.NewClientset(testPod("a"), testPod("b"))
			var poked []string
			kube.PrependReactor("patch", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
				p := action.(clienttesting.PatchAction)
				var body struct {
					Metadata struct {
						UID         types.UID         `json:"uid"`
						Annotations map[string]string `json:"annotations"`
					} `json:"metadata"`
				}
				if err := json.Unmarshal(p.GetPatch(), &body); err != nil || body.Metadata.Annotations[Annotation] == "" || body.Metadata.UID != types.UID("uid-"+p.GetName()) {
					t.Errorf("patch %s: %v", p.GetPatch(), err)
				}
				poked = append(poked, p.GetName())
				return true, nil, nil
			})
			clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
			r := New(kube, clk, window, "test")
			defer r.queue.ShutDown()
			drain := func() {
				for r.queue.Len() > 0 {
					r.processNext(ctx)
				}
			}
			tc.run(r, clk, drain)
			drain()
			if len(poked) != len(tc.want) {
				t.Fatalf("poked %v, want %v", poked, tc.want)
			}
			for i := range poked {
				if poked[i] != tc.want[i] {
					t.Fatalf("poked %v, want %v", poked, tc.want)
				}
			}
		})
	}
}
