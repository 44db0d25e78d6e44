package plugin

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	fwk "k8s.io/kube-scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"

	tesserafake "github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
	"github.com/tessera-gpu/tessera/scheduler/commit"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
)

// TestBindWithLostAnswerKeepsTheReservation binds a pod whose binding's
// answer is lost while the pod reads unbound: the pod may be bound yet, so
// its allocation is kept, and Unreserve leaves its GPUs reserved, lest
// another pod be placed on them before the allocation informer sees it.
func TestBindWithLostAnswerKeepsTheReservation(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	ctx := context.Background()
	pod := gpuPod("p", 15360)
	kube := kubefake.NewClientset(pod)
	kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "binding" {
			return true, nil, fmt.Errorf("Post \"https://127.0.0.1/api/v1/namespaces/default/pods/p/binding\": %w", context.Canceled)
		}
		return false, nil, nil
	})
	clk := testingclock.NewFakeClock(time.Now())
	p.committer = &commit.Committer{
		Gate: inflight.NewGate(clk, time.Minute, 0, nil), Clock: clk,
		Kube: kube, Tessera: tesserafake.NewClientset(), BindWaitTimeout: time.Second,
	}

	state := preFilter(t, p, pod)
	wantCode(t, "Reserve", p.Reserve(ctx, state, pod, node), fwk.Success)
	wantCode(t, "Bind", p.Bind(ctx, state, pod, node), fwk.Error)
	p.Unreserve(ctx, state, pod, node)
	if _, ok := v.Pod(pod.UID); !ok {
		t.Error("Unreserve released the GPUs of a pod whose binding may have been made")
	}
	other := gpuPod("other", 15360)
	wantCode(t, "Reserve another pod on both GPUs", p.Reserve(ctx, preFilter(t, p, other), other, node), fwk.Success)
	late := gpuPod("late", 15360)
	wantCode(t, "Reserve a third pod", p.Reserve(ctx, preFilter(t, p, late), late, node), fwk.Unschedulable)
}
