package extender

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	"k8s.io/utils/ptr"

	"github.com/tessera-gpu/tessera/scheduler/metrics"
)

// TestFilterTellsWhatPreemptionWouldTake pins the event a pod gets when
// no node fits it and only evicting lower-priority pods would make room,
// which kube-scheduler does not do for GPU memory in extender mode.
func TestFilterTellsWhatPreemptionWouldTake(t *testing.T) {
	// The t4 node's one 15000 MiB GPU holds low-a (priority 10) and low-b
	// (20), 6000 MiB each; high (priority 100) holds 6000 MiB when there.
	pod := func(name string, priority int32) *corev1.Pod {
		p := podSpec(name, nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=6000")
		p.Spec.Priority = ptr.To(priority)
		p.Spec.NodeName = "t4"
		return p
	}
	tests := []struct {
		name string
		// high puts a pod of the preemptor's priority in low-b's place.
		high      bool
		preemptor *corev1.Pod
		want      string // "" for no event
	}{{
		name:      "the fewest lower-priority pods, the least important first",
		preemptor: podSpec("preemptor", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=9000"),
		want:      "GPUPreemptionNotHelpful evicting ns/low-a on node t4 frees GPU 0 for the pod, but kube-scheduler does not preempt for GPU memory, cores or shares in extender mode (it counts GPUs only as nvidia.com/gpu); plugin mode does",
	}, {
		name:      "evicting every lower-priority pod still leaves no room",
		high:      true,
		preemptor: podSpec("preemptor", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=12000"),
		want:      "GPUPreemptionNotHelpful evicting ns/low-a on node t4 would not make room: without them the node had 0/1 GPUs that fit (1 not enough memory)",
	}, {
		name: "preemptionPolicy Never",
		preemptor: func() *corev1.Pod {
			p := podSpec("preemptor", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=9000")
			p.Spec.PreemptionPolicy = ptr.To(corev1.PreemptNever)
			return p
		}(),
	}, {
		name: "no lower-priority pods",
		preemptor: func() *corev1.Pod {
			p := podSpec("preemptor", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=9000")
			p.Spec.Priority = ptr.To[int32](5)
			return p
		}(),
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.place("low-a", f.addPod(pod("low-a", 10)).UID, "t4-gpu0", 6000, 0)
			if tc.high {
				f.place("high", f.addPod(pod("high", 100)).UID, "t4-gpu0", 6000, 0)
			} else {
				f.place("low-b", f.addPod(pod("low-b", 20)).UID, "t4-gpu0", 6000, 0)
			}
			if tc.preemptor.Spec.Priority == nil {
				tc.preemptor.Spec.Priority = ptr.To[int32](100)
			}
			for range 3 {
				if _, outcome := f.filter(&extenderv1.ExtenderArgs{Pod: tc.preemptor, NodeNames: &[]string{"t4"}}); outcome != metrics.ResultUnschedulable {
					t.Fatalf("outcome %q, want unschedulable", outcome)
				}
			}
			events := f.events()
			switch {
			case tc.want == "" && len(events) > 0:
				t.Errorf("events %q, want none", events)
			case tc.want != "" && (len(events) != 1 || !strings.HasPrefix(events[0], "Warning "+tc.want)):
				t.Errorf("events %q, want one %q", events, tc.want)
			}
		})
	}
}
