package plugin

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
)

// withPriority sets the pod's priority, as admission does from its class.
func withPriority(pod *v1.Pod, priority int32) *v1.Pod {
	pod.Spec.Priority = ptr.To(priority)
	return pod
}

// TestTellPreempting plays a dry run that takes both pods off the node and
// gives one back, as DefaultPreemption's reprieve does; once kube-scheduler
// nominates the preemptor to the node, its next PreFilter tells it, once,
// which pod goes and which GPU that frees.
func TestTellPreempting(t *testing.T) {
	p, v, _ := newTestPlugin(t)
	recorder := events.NewFakeRecorder(10)
	p.notifier = preemption.NewNotifier(recorder, p.clock, preemption.DefaultRepeat)
	ctx := context.Background()
	low0, low1, preemptor, state, ni := twoThirdsFull(t, p, v)

	dry := state.Clone()
	wantCode(t, "RemovePod low-0", p.RemovePod(ctx, dry, preemptor, podInfo(t, low0), ni), fwk.Success)
	wantCode(t, "RemovePod low-1", p.RemovePod(ctx, dry, preemptor, podInfo(t, low1), ni), fwk.Success)
	wantCode(t, "AddPod low-0", p.AddPod(ctx, dry, preemptor, podInfo(t, low0), ni), fwk.Success)
	if len(recorder.Events) != 0 {
		t.Fatalf("events before the nomination: %d", len(recorder.Events))
	}

	preemptor.Status.NominatedNodeName = node
	preFilter(t, p, preemptor)
	preFilter(t, p, preemptor)
	close(recorder.Events)
	var got []string
	for e := range recorder.Events {
		got = append(got, e)
	}
	want := "Normal GPUPreemption evicting default/low-1 on node node-1 frees GPU 1 for the pod"
	if len(got) != 1 || got[0] != want {
		t.Errorf("events %q, want one %q", got, want)
	}
}

func TestWhyNoPreemption(t *testing.T) {
	tests := []struct {
		name string
		// low and high are pods of priority 10 and 100 holding 5 and 10
		// GiB on GPU-0 and GPU-1 in turn.
		low, high int
		want      string
	}{{
		name: "evicting every lower-priority pod still leaves no room",
		low:  2, high: 2,
		want: "GPU preemption: none; evicting all 2 lower-priority GPU pods on node node-1 would not make room: without them the node had 0/2 GPUs that fit (2 not enough memory)",
	}, {
		name: "no lower-priority pods",
		high: 2,
		want: "GPU preemption: none; 1 node(s) had no lower-priority pods holding GPUs",
	}, {
		name: "room without the lower-priority pods that kube-scheduler did not take",
		low:  4,
		want: "GPU preemption: none; 1 node(s) would have room without their lower-priority GPU pods, but kube-scheduler's preemption took none of them",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, v, _ := newTestPlugin(t)
			var pods []*v1.Pod
			for i := range tc.low + tc.high {
				priority, name, memory := int32(10), "low-", int64(5120)
				if i >= tc.low {
					priority, name, memory = 100, "high-", 10240
				}
				pod := withPriority(gpuPod(name+strconv.Itoa(i), memory), priority)
				place(v, pod, []string{"GPU-0", "GPU-1"}[i%2], memory)
				pods = append(pods, pod)
			}
			preemptor := withPriority(gpuPod("preemptor", 10240), 100)
			state := preFilter(t, p, preemptor)
			s, err := readState(state)
			if err != nil {
				t.Fatal(err)
			}
			statuses := framework.NewDefaultNodeToStatus()
			statuses.Set(node, fwk.NewStatus(fwk.Unschedulable, "not enough memory").WithPlugin(Name))
			got := p.whyNoPreemption(preemptor, s.req, []fwk.NodeInfo{nodeInfo(pods...)}, statuses, s.evictless)
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestPostFilterPreemptNever(t *testing.T) {
	p, _, _ := newTestPlugin(t)
	pod := gpuPod("never", 10240)
	pod.Spec.PreemptionPolicy = ptr.To(v1.PreemptNever)
	state := preFilter(t, p, pod)
	_, st := p.PostFilter(context.Background(), state, pod, framework.NewDefaultNodeToStatus())
	if st.Code() != fwk.Unschedulable || st.Message() != "GPU preemption: none, the pod's preemptionPolicy is Never" {
		t.Errorf("PostFilter: %v %q", st.Code(), st.Message())
	}
}

// snapshotHandle is a framework handle of which only kube-scheduler's
// snapshot of the nodes is read.
type snapshotHandle struct {
	fwk.Handle
	snapshot fwk.SharedLister
}

func (h snapshotHandle) SnapshotSharedLister() fwk.SharedLister { return h.snapshot }

// TestPostFilterUnresolvable checks that a pod whose GPUs no node could
// ever take, so that kube-scheduler's preemption passed every node by, is
// told what no eviction changes, naming the limit; and that a node passed
// by for having nothing to evict is told apart.
func TestPostFilterUnresolvable(t *testing.T) {
	tests := []struct {
		name    string
		memory  int64
		gpuType string
		// a10 adds node-2 with one NVIDIA A10.
		a10 bool
		// asLow gives the preemptor the priority of the pods on node-1,
		// and puts one on each of its GPUs.
		asLow bool
		want  string
	}{{
		name:   "more memory than any GPU of the node has names the largest",
		memory: 20000,
		want:   "GPU preemption: none; no GPU on node node-1 has the 20000 MiB the pod asks for: the largest (Tesla T4) has 15360 MiB",
	}, {
		name:   "of several nodes, the largest GPU is named with its node",
		memory: 30000,
		a10:    true,
		want:   "GPU preemption: none; no GPU on 2 nodes has the 30000 MiB the pod asks for: the largest (NVIDIA A10, on node node-2) has 23028 MiB",
	}, {
		name:    "a node with none of the pod's GPU type is counted",
		memory:  1000,
		gpuType: "A100",
		want:    "GPU preemption: none; 1 node(s) could not take the pod's GPUs even with no pods on them",
	}, {
		name:   "a node that would have room but runs no pod of lower priority is counted as such",
		memory: 12000,
		asLow:  true,
		want:   "GPU preemption: none; 1 node(s) had no lower-priority pods holding GPUs",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, v, _ := newTestPlugin(t)
			low := withPriority(gpuPod("low", 5120), 10)
			place(v, low, "GPU-0", 5120)
			preemptor := withPriority(gpuPod("preemptor", tc.memory), 100)
			nodes := []fwk.NodeInfo{nodeInfo(low)}
			if tc.asLow {
				withPriority(preemptor, 10)
				low2 := withPriority(gpuPod("low-2", 5120), 10)
				place(v, low2, "GPU-1", 5120)
				nodes = []fwk.NodeInfo{nodeInfo(low, low2)}
			}
			if tc.gpuType != "" {
				preemptor.Annotations = map[string]string{"tessera.dev/gpu-type": tc.gpuType}
			}
			if tc.a10 {
				gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}}
				gn.Status.Devices = []gpuv1alpha1.GPUDevice{{
					UUID: "GPU-A10", Model: "NVIDIA A10", MemoryMiB: 23028, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
				}}
				v.SetGPUNode(gn)
				v.SetLease("node-2", p.clock.Now())
				ni := framework.NewNodeInfo()
				ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-2"}})
				nodes = append(nodes, ni)
			}
			ctx := context.Background()
			state := preFilter(t, p, preemptor)
			statuses := framework.NewDefaultNodeToStatus()
			var snapshot []*v1.Node
			for _, ni := range nodes {
				st := p.Filter(ctx, state, preemptor, ni)
				wantCode(t, "Filter", st, fwk.UnschedulableAndUnresolvable)
				statuses.Set(ni.Node().Name, st.WithPlugin(Name))
				snapshot = append(snapshot, ni.Node())
			}
			p.handle = snapshotHandle{snapshot: cache.NewSnapshot(nil, snapshot)}
			_, got := p.PostFilter(ctx, state, preemptor, statuses)
			if got.Code() != fwk.Unschedulable || got.Message() != tc.want {
				t.Errorf("PostFilter: %v %q, want %q", got.Code(), got.Message(), tc.want)
			}
		})
	}
}
