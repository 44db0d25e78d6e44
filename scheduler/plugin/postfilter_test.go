package plugin

import (
	"context"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

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
			got := p.whyNoPreemption(preemptor, s.req, []fwk.NodeInfo{nodeInfo(pods...)}, statuses)
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
