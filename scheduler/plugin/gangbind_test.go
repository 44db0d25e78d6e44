package plugin

import (
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	tesserafake "github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
	"github.com/tessera-gpu/tessera/scheduler/commit"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
)

// writes records what the gang's binds asked the API server for.
type writes struct {
	mu          sync.Mutex
	bindings    map[string]int
	allocations int
	dryRuns     int
}

func (w *writes) binding(action clienttesting.Action) (bool, runtime.Object, error) {
	if action.GetSubresource() != "binding" {
		return false, nil, nil
	}
	name := action.(clienttesting.CreateAction).GetObject().(*v1.Binding).Name
	w.mu.Lock()
	w.bindings[name]++
	w.mu.Unlock()
	if name == "m-1" {
		return true, nil, apierrors.NewBadRequest("bindings of pods named m-1 are refused")
	}
	return true, nil, nil
}

func (w *writes) allocation(action clienttesting.Action) (bool, runtime.Object, error) {
	create := action.(clienttesting.CreateActionImpl)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(create.CreateOptions.DryRun) > 0 {
		w.dryRuns++
	} else {
		w.allocations++
	}
	return true, create.GetObject(), nil
}

// TestGangBindRolledBack places two pods of a PodGroup together in a pod
// group cycle, as kube-scheduler v1.37.2 does (Reserve on the placement
// tried, undone, Reserve again for binding, each pod's Bind in its own
// goroutine), with the second pod's binding refused: neither pod is
// bound, no GPUAllocation is written (only dry runs), Unreserve gives
// back both pods' GPUs, and the gang is backed off whole.
func TestGangBindRolledBack(t *testing.T) {
	p, v, act := newTestPlugin(t)
	clk := testingclock.NewFakeClock(time.Now())
	p.backoff = newBindBackoff(t.Context(), clk, act)
	p.gangs = newGangBarriers(klog.Background(), clk, gangBindTimeout, p.backoff.failed)
	var pods []*v1.Pod
	for _, name := range []string{"m-0", "m-1"} {
		pod := gpuPod(name, 4000)
		pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To("trainer")}
		pods = append(pods, pod)
	}
	w := &writes{bindings: map[string]int{}}
	kube := kubefake.NewClientset(pods[0], pods[1])
	kube.PrependReactor("create", "pods", w.binding)
	tessera := tesserafake.NewClientset()
	tessera.PrependReactor("create", "gpuallocations", w.allocation)
	p.committer = &commit.Committer{
		Gate: inflight.NewGate(clk, time.Minute, 0, nil), Clock: clk,
		Kube: kube, Tessera: tessera, BindWaitTimeout: time.Second,
	}

	states := placeGang(t, p, pods)
	var wg sync.WaitGroup
	statuses := make([]*fwk.Status, len(pods))
	for i, pod := range pods {
		wg.Go(func() { statuses[i] = p.Bind(t.Context(), states[i], pod, node) })
	}
	wg.Wait()
	for i, pod := range pods {
		wantCode(t, "Bind "+pod.Name, statuses[i], fwk.Error)
		if !strings.Contains(statuses[i].Message(), "are refused") {
			t.Errorf("Bind %s says %q, want why the gang was rolled back", pod.Name, statuses[i].Message())
		}
		p.Unreserve(t.Context(), states[i], pod, node)
		if _, ok := v.Pod(pod.UID); ok {
			t.Errorf("%s's GPUs are still held after its gang was rolled back", pod.Name)
		}
		if _, waiting := p.backoff.waiting(pod.UID); !waiting {
			t.Errorf("%s is not backed off with its gang", pod.Name)
		}
	}
	if w.allocations > 0 || w.dryRuns != 2 {
		t.Errorf("%d GPUAllocations written and %d dry runs, want none written and one dry run per pod", w.allocations, w.dryRuns)
	}
	if w.bindings["m-0"] != 1 {
		t.Errorf("m-0's binding was asked for %d times, want once, as a dry run", w.bindings["m-0"])
	}
}

// placeGang runs the pods through a pod group cycle on one placement and
// reserves them again for binding, and returns their cycle states.
func placeGang(t *testing.T, p *Plugin, pods []*v1.Pod) []*framework.CycleState {
	t.Helper()
	group, placement := framework.NewCycleState(), framework.NewCycleState()
	var states []*framework.CycleState
	for _, pod := range pods {
		state := preFilter(t, p, pod).(*framework.CycleState)
		state.SetPodGroupSchedulingCycle(group)
		state.SetPlacementCycleState(placement)
		wantCode(t, "Reserve "+pod.Name+" on the placement tried", p.Reserve(t.Context(), state, pod, node), fwk.Success)
		states = append(states, state)
	}
	for i := len(pods) - 1; i >= 0; i-- {
		p.Unreserve(t.Context(), states[i], pods[i], node)
	}
	for i, pod := range pods {
		states[i].SetPodGroupSchedulingCycle(nil)
		wantCode(t, "Reserve "+pod.Name+" for binding", p.Reserve(t.Context(), states[i], pod, node), fwk.Success)
	}
	return states
}
