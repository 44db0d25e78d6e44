package plugin

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

const node = "node-1"

// activations records the pods the plugin activates.
type activations struct {
	mu   sync.Mutex
	pods []string
	// gate, when set, is asked about each pod activated, as
	// kube-scheduler's queue asks the fit gate.
	gate func(*v1.Pod) *fwk.Status
}

func (a *activations) Activate(_ klog.Logger, pods map[string]*v1.Pod) {
	a.mu.Lock()
	for key := range pods {
		a.pods = append(a.pods, key)
	}
	gate := a.gate
	a.mu.Unlock()
	if gate != nil {
		for _, pod := range pods {
			gate(pod)
		}
	}
}

// told records what held pods are told, as waiters.Reasons would write
// it.
type told struct {
	mu  sync.Mutex
	why map[types.UID][]string
}

func (t *told) Tell(pod *v1.Pod, why string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.why == nil {
		t.why = map[types.UID][]string{}
	}
	t.why[pod.UID] = append(t.why[pod.UID], why)
}

// of returns what the pod was told, in order.
func (t *told) of(uid types.UID) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.why[uid]
}

// newTestPlugin returns a plugin over a view of one node with two 15360 MiB
// GPUs, and the view; conditions go on the node's GPUNode.
func newTestPlugin(t testing.TB, conditions ...metav1.Condition) (*Plugin, *view.View, *activations) {
	t.Helper()
	clk := testingclock.NewFakePassiveClock(time.Now())
	v := view.New()
	gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: node}}
	gn.Status.Conditions = conditions
	for i, uuid := range []string{"GPU-0", "GPU-1"} {
		gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{
			UUID: uuid, Index: int32(i), Model: "Tesla T4", MemoryMiB: 15360, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
		})
	}
	v.SetGPUNode(gn)
	v.SetLease(node, clk.Now())
	act := &activations{}
	// Tests set quotas in the map, which the plugin's and the requeuer's
	// rules share.
	rules := view.Rules{HeartbeatMaxAge: time.Minute, HAMiCoreMissing: view.HAMiCoreRefuse, CoresResource: gpurequest.DefaultResourceNames().Cores, Quotas: quota.Fixed{}}
	p := &Plugin{
		view: v,
		parser: podrequest.Parser{
			ResourceNames: gpurequest.DefaultResourceNames(), DefaultNodePolicy: gpurequest.Binpack, DefaultGPUPolicy: gpurequest.Spread,
		},
		clock:   clk,
		requeue: waiters.NewQueue(act, klog.Background(), v, clk, rules),
		ready:   func() bool { return true },
		rules:   rules,
		fitters: sync.Pool{New: func() any { return new(placement.Fitter) }},
	}
	p.fitGate = fitGate{waiters.NewGate("tessera-scheduler", p.requeue, waiters.NewPriorities(p.requeue), &told{}, waiters.NewUnsynced(func() bool { return p.ready() }))}
	return p, v, act
}

// gpuPod is a pod asking for one GPU with memoryMiB of its memory.
func gpuPod(name string, memoryMiB int64) *v1.Pod {
	names := gpurequest.DefaultResourceNames()
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID(name)},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main", Resources: v1.ResourceRequirements{Limits: v1.ResourceList{
			names.Count:  resource.MustParse("1"),
			names.Memory: *resource.NewQuantity(memoryMiB, resource.DecimalSI),
		}}}}},
	}
}

// place records in the view that the pod holds memoryMiB on the GPU.
func place(v *view.View, pod *v1.Pod, uuid string, memoryMiB int64) {
	v.Place(&gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: types.UID("alloc-" + pod.Name)},
		Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: pod.UID, NodeName: node, Containers: []gpuv1alpha1.ContainerAllocation{{
			Name: "main", Kind: gpuv1alpha1.ContainerApp, Devices: []gpuv1alpha1.DeviceAllocation{{UUID: uuid, MemoryMiB: memoryMiB}},
		}}},
	})
}

// nodeInfo is kube-scheduler's snapshot of the node with the pods on it.
func nodeInfo(pods ...*v1.Pod) fwk.NodeInfo {
	ni := framework.NewNodeInfo(pods...)
	ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	return ni
}

func podInfo(t *testing.T, pod *v1.Pod) fwk.PodInfo {
	t.Helper()
	pi, err := framework.NewPodInfo(pod)
	if err != nil {
		t.Fatal(err)
	}
	return pi
}

// preFilter starts a cycle for the pod and fails the test unless it passes.
func preFilter(t *testing.T, p *Plugin, pod *v1.Pod) fwk.CycleState {
	t.Helper()
	state := framework.NewCycleState()
	if _, st := p.PreFilter(context.Background(), state, pod, nil); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	return state
}

func wantCode(t *testing.T, what string, st *fwk.Status, code fwk.Code) {
	t.Helper()
	if st.Code() != code {
		t.Errorf("%s: %v (%s), want %s", what, st.Code(), st.Message(), code)
	}
}

// twoThirdsFull places low-0 and low-1 (10 GiB each) on GPU-0 and GPU-1,
// and starts a cycle for a preemptor that wants 10 GiB.
func twoThirdsFull(t *testing.T, p *Plugin, v *view.View) (low0, low1, preemptor *v1.Pod, state fwk.CycleState, ni fwk.NodeInfo) {
	t.Helper()
	low0, low1 = gpuPod("low-0", 10240), gpuPod("low-1", 10240)
	place(v, low0, "GPU-0", 10240)
	place(v, low1, "GPU-1", 10240)
	preemptor = withPriority(gpuPod("preemptor", 10240), 100)
	return low0, low1, preemptor, preFilter(t, p, preemptor), nodeInfo(low0, low1)
}

// TestDryRun plays DefaultPreemption's dry run: removing a pod frees its
// GPU for the preemptor, putting it back takes the GPU again, a nominated
// pod counts on the node, and a clone of the cycle's state changes apart
// from the state it was cloned from.
func TestDryRun(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	ctx := context.Background()
	_, low1, preemptor, state, ni := twoThirdsFull(t, p, v)

	wantCode(t, "Filter with both GPUs two-thirds full", p.Filter(ctx, state, preemptor, ni), fwk.Unschedulable)

	dry := state.Clone()
	wantCode(t, "RemovePod", p.RemovePod(ctx, dry, preemptor, podInfo(t, low1), ni), fwk.Success)
	wantCode(t, "Filter with low-1 removed", p.Filter(ctx, dry, preemptor, ni), fwk.Success)
	wantCode(t, "Filter of the cycle's own state", p.Filter(ctx, state, preemptor, ni), fwk.Unschedulable)

	reprieve := dry.Clone()
	wantCode(t, "AddPod", p.AddPod(ctx, reprieve, preemptor, podInfo(t, low1), ni), fwk.Success)
	wantCode(t, "Filter with low-1 put back", p.Filter(ctx, reprieve, preemptor, ni), fwk.Unschedulable)
	wantCode(t, "Filter of the state cloned before AddPod", p.Filter(ctx, dry, preemptor, ni), fwk.Success)

	nominated := dry.Clone()
	wantCode(t, "AddPod of a nominated pod", p.AddPod(ctx, nominated, preemptor, podInfo(t, gpuPod("nominated", 10240)), ni), fwk.Success)
	wantCode(t, "Filter with a nominated pod on the freed GPU", p.Filter(ctx, nominated, preemptor, ni), fwk.Unschedulable)
	wantCode(t, "RemovePod of the nominated pod", p.RemovePod(ctx, nominated, preemptor, podInfo(t, gpuPod("nominated", 10240)), ni), fwk.Success)
	wantCode(t, "Filter with the nominated pod gone", p.Filter(ctx, nominated, preemptor, ni), fwk.Success)
}

// TestDryRunSeesWhatKubeSchedulerSees checks that a pod kube-scheduler
// knows is gone from the node (a victim just deleted) frees its GPUs in a
// dry run even before the view hears of the deletion, so that a second
// dry run does not evict another pod in its place; outside dry runs the
// view decides.
func TestDryRunSeesWhatKubeSchedulerSees(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	ctx := context.Background()
	low0, deleted, low2 := gpuPod("low-0", 10240), gpuPod("deleted", 10240), gpuPod("low-2", 5120)
	place(v, low0, "GPU-0", 10240)
	place(v, deleted, "GPU-1", 10240)
	place(v, low2, "GPU-1", 5120)
	preemptor := withPriority(gpuPod("preemptor", 10240), 100)
	state := preFilter(t, p, preemptor)
	ni := nodeInfo(low0, low2)

	wantCode(t, "Filter outside a dry run", p.Filter(ctx, state, preemptor, ni), fwk.Unschedulable)
	dry := state.Clone()
	wantCode(t, "RemovePod", p.RemovePod(ctx, dry, preemptor, podInfo(t, low2), ni), fwk.Success)
	wantCode(t, "AddPod", p.AddPod(ctx, dry, preemptor, podInfo(t, low2), ni), fwk.Success)
	wantCode(t, "Filter in a dry run with every known pod in place", p.Filter(ctx, dry, preemptor, ni), fwk.Success)
}

// TestFilterUnresolvable checks that a pod no GPU of the node could ever
// hold is unresolvable, so preemption passes the node by, and so is one
// that only lacks free memory where no pod of lower priority runs, while
// one that lacks free memory that evicting pods frees is not.
func TestFilterUnresolvable(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	low, low2 := gpuPod("low", 15360), gpuPod("low-2", 15360)
	place(v, low, "GPU-0", 15360)
	place(v, low2, "GPU-1", 15360)
	tests := []struct {
		name     string
		memory   int64
		priority int32
		want     fwk.Code
	}{
		{"more memory than any GPU has", 20000, 100, fwk.UnschedulableAndUnresolvable},
		{"memory that evicting pods frees", 10000, 100, fwk.Unschedulable},
		{"memory that evicting pods frees, no pod of lower priority", 10000, 0, fwk.UnschedulableAndUnresolvable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := withPriority(gpuPod("pod", tc.memory), tc.priority)
			st := p.Filter(context.Background(), preFilter(t, p, pod), pod, nodeInfo(low, low2))
			wantCode(t, "Filter", st, tc.want)
			if !strings.Contains(st.Message(), "not enough memory") {
				t.Errorf("Filter says %q, want the reason", st.Message())
			}
		})
	}
}

// TestReserveUnreserve checks that Reserve takes the GPUs in the view, so
// the next pod does not get them, and that Unreserve gives them back and
// activates the pod waiting for them.
func TestReserveUnreserve(t *testing.T) {
	p, v, act := newTestPlugin(t)
	ctx := context.Background()
	first, second := gpuPod("first", 15360), gpuPod("second", 15360)
	place(v, gpuPod("other", 15360), "GPU-1", 15360)

	s1 := preFilter(t, p, first)
	wantCode(t, "Reserve first", p.Reserve(ctx, s1, first, node), fwk.Success)
	s2 := preFilter(t, p, second)
	wantCode(t, "Filter second", p.Filter(ctx, s2, second, nodeInfo()), fwk.UnschedulableAndUnresolvable)
	wantCode(t, "Reserve second", p.Reserve(ctx, s2, second, node), fwk.Unschedulable)

	p.Unreserve(ctx, s1, first, node)
	if _, ok := v.Pod(first.UID); ok {
		t.Errorf("first still holds GPUs after Unreserve")
	}
	if len(act.pods) != 1 || act.pods[0] != "default/second" {
		t.Errorf("activated %v, want the waiting pod default/second", act.pods)
	}
	wantCode(t, "Filter second after Unreserve", p.Filter(ctx, s2, second, nodeInfo()), fwk.Success)
}

// TestPreFilterSkipsPodsWithoutGPUs checks that a pod asking for no GPUs
// skips the plugin, and that Bind leaves it to the next binder.
func TestPreFilterSkipsPodsWithoutGPUs(t *testing.T) {
	p, _, _ := newTestPlugin(t)
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "cpu", Namespace: "default", UID: "cpu"}, Spec: v1.PodSpec{Containers: []v1.Container{{Name: "main"}}}}
	state := framework.NewCycleState()
	_, st := p.PreFilter(context.Background(), state, pod, nil)
	wantCode(t, "PreFilter", st, fwk.Skip)
	wantCode(t, "Bind", p.Bind(context.Background(), state, pod, node), fwk.Skip)
}

// TestPreFilterBeforeSync checks that a pod that comes while the view is
// still being built fails with an error, which kube-scheduler retries
// after its back-off, not as unschedulable, which would wait for a GPU
// event that the first sync does not send.
func TestPreFilterBeforeSync(t *testing.T) {
	p, _, _ := newTestPlugin(t)
	p.ready = func() bool { return false }
	_, st := p.PreFilter(context.Background(), framework.NewCycleState(), gpuPod("early", 1024), nil)
	wantCode(t, "PreFilter", st, fwk.Error)
}

// TestNoHAMiCore checks the extender's rule for a node whose HAMi-core
// library is missing: a pod asking for a slice is kept off it, under
// Refuse for good (no preemption helps), and placed under Warn.
func TestNoHAMiCore(t *testing.T) {
	missing := metav1.Condition{
		Type: gpuv1alpha1.GPUNodeHAMiCoreReady, Status: metav1.ConditionFalse,
		Reason: gpuv1alpha1.HAMiCoreLibraryMissing, Message: "no libvgpu.so",
	}
	tests := []struct {
		name   string
		policy view.HAMiCorePolicy
		want   fwk.Code
	}{
		{"Refuse", view.HAMiCoreRefuse, fwk.UnschedulableAndUnresolvable},
		{"Warn", view.HAMiCoreWarn, fwk.Success},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _, _ := newTestPlugin(t, missing)
			p.rules.HAMiCoreMissing = tc.policy
			pod := gpuPod("slice", 1000)
			state := preFilter(t, p, pod)
			wantCode(t, "Filter", p.Filter(context.Background(), state, pod, nodeInfo()), tc.want)
			wantCode(t, "Reserve", p.Reserve(context.Background(), state, pod, node), map[fwk.Code]fwk.Code{
				fwk.Success: fwk.Success, fwk.UnschedulableAndUnresolvable: fwk.Unschedulable}[tc.want])
		})
	}
}
