package requeue

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/tessera-gpu/tessera/scheduler/placement"
)

// room is a namespace's GPU quota with room left, as admits closures read
// it when they are called.
type room struct{ left int64 }

// admits is a pod's admits that asks for asked GPUs of the room.
func (q *room) admits(asked int64) func(placement.Use) (placement.Use, bool) {
	return func(taken placement.Use) (placement.Use, bool) {
		return placement.Use{GPUs: asked}, taken.GPUs+asked <= q.left
	}
}

// free makes room for one GPU in namespace ns and tells r.
func (q *room) free(r *Requeuer, ns string) {
	q.left = 1
	r.QuotaFreed(ns)
}

// waitOnQuota has the pod turned away by its quota, asking for asked GPUs.
func waitOnQuota(r *Requeuer, clk *clocktesting.FakeClock, q *room, name string, asked int64) {
	r.Rejected(testPod(name), nil)
	r.OverQuota(testPod(name), clk.Now(), q.admits(asked))
}

// waitThenFree has pod a turned away by its quota, asking for asked GPUs,
// and a second later room for one GPU freed in namespace ns.
func waitThenFree(asked int64, ns string) func(r *Requeuer, clk *clocktesting.FakeClock, q *room) {
	return func(r *Requeuer, clk *clocktesting.FakeClock, q *room) {
		waitOnQuota(r, clk, q, "a", asked)
		clk.Step(time.Second)
		q.free(r, ns)
	}
}

func TestQuotaRequeue(t *testing.T) {
	tests := []struct {
		name string
		run  func(r *Requeuer, clk *clocktesting.FakeClock, q *room)
		want []string
	}{
		{
			name: "a pod over its quota is poked when the quota has room",
			run:  waitThenFree(1, "ns"),
			want: []string{"a"},
		},
		{
			name: "not while the quota has no room for what it asked",
			run:  waitThenFree(2, "ns"),
		},
		{
			name: "nor for another namespace's room",
			run:  waitThenFree(1, "other"),
		},
		{
			name: "room for one pod pokes one, the one turned away first",
			run: func(r *Requeuer, clk *clocktesting.FakeClock, q *room) {
				for _, name := range []string{"b", "a"} {
					waitOnQuota(r, clk, q, name, 1)
					clk.Step(time.Second)
				}
				q.free(r, "ns")
			},
			want: []string{"b"},
		},
		{
			name: "a pod waiting on its quota outlives the window",
			run: func(r *Requeuer, clk *clocktesting.FakeClock, q *room) {
				waitOnQuota(r, clk, q, "a", 1)
				r.Rejected(testPod("b"), nil)
				clk.Step(10 * window)
				r.Freed("n1")
				q.free(r, "ns")
			},
			want: []string{"a"},
		},
		{
			name: "a pod turned away again for GPUs no longer waits on its quota",
			run: func(r *Requeuer, clk *clocktesting.FakeClock, q *room) {
				waitOnQuota(r, clk, q, "a", 1)
				clk.Step(time.Second)
				r.Rejected(testPod("a"), servedBy())
				q.free(r, "ns")
			},
		},
		{
			name: "room freed while the filter ran pokes the pod at once",
			run: func(r *Requeuer, clk *clocktesting.FakeClock, q *room) {
				since := clk.Now()
				clk.Step(time.Millisecond)
				r.QuotaFreed("ns")
				r.Rejected(testPod("a"), nil)
				r.OverQuota(testPod("a"), since, q.admits(1))
			},
			want: []string{"a"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			kube := kubefake.NewClientset(testPod("a"), testPod("b"))
			clk := clocktesting.NewFakeClock(time.Unix(1_700_000_000, 0))
			r := New(kube, clk, window, "test")
			defer r.queue.ShutDown()
			tc.run(r, clk, &room{})
			for r.queue.Len() > 0 {
				r.processNext(ctx)
			}
			var poked []string
			for _, name := range []string{"a", "b"} {
				if p, err := kube.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{}); err == nil && p.Annotations[Annotation] != "" {
					poked = append(poked, name)
				}
			}
			if !slices.Equal(poked, tc.want) {
				t.Errorf("poked %v, want %v", poked, tc.want)
			}
		})
	}
}
