package plugin

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"
)

// memberState is the cycle state of a PodGroup member's try in the
// placement, as kube-scheduler's group cycle makes it.
func memberState(placement *framework.CycleState) *framework.CycleState {
	state := framework.NewCycleState()
	state.SetPodGroupSchedulingCycle(placement.GetPodGroupSchedulingCycle())
	state.SetPlacementCycleState(placement)
	return state
}

// newPlacement is a placement of the group cycle.
func newPlacement(group *framework.CycleState) *framework.CycleState {
	placement := framework.NewCycleState()
	placement.SetPodGroupSchedulingCycle(group)
	return placement
}

// TestGangReason pins what the plugin says when a PodGroup's gang does not
// fit: the members that did not fit are told, node by node, the gang's
// name and how many of its pods took room before them; PodGroupPostFilter
// names the gang, the pods it needs at once and the most that fit in any
// placement tried.
func TestGangReason(t *testing.T) {
	tests := []struct {
		name string
		// fits are, per placement tried, how many members fit before one
		// did not.
		fits       []int
		wantSuffix string
		wantReason string
	}{
		{"three of four fit", []int{3}, " for gang room with 3 of its pods placed", "gang room: 4 pods need room, 3 fit"},
		{"none fits", []int{0}, " for gang room with 0 of its pods placed", "gang room: 4 pods need room, 0 fit"},
		{"the best of several placements", []int{1, 3, 2}, " for gang room with 2 of its pods placed", "gang room: 4 pods need room, 3 fit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _, _ := newTestPlugin(t)
			recorder := events.NewFakeRecorder(10)
			p.recorder = recorder
			ctx := context.Background()
			group := framework.NewCycleState()
			var suffix string
			for _, fit := range tt.fits {
				placement := newPlacement(group)
				for range fit {
					gangReserved(memberState(placement))
				}
				suffix = gangSuffix(memberState(placement), gangMember("room-x", "room", 1024))
			}
			if suffix != tt.wantSuffix {
				t.Errorf("the reason of the member that did not fit ends %q, want %q", suffix, tt.wantSuffix)
			}
			members := []*v1.Pod{gangMember("room-0", "room", 1024), gangMember("room-1", "room", 1024)}
			_, st := p.PodGroupPostFilter(ctx, group, podGroupInfo(gangPodGroup("room", 4), members...), nil)
			wantCode(t, "PodGroupPostFilter", st, fwk.Unschedulable)
			if st.Message() != tt.wantReason {
				t.Errorf("PodGroupPostFilter says %q, want %q", st.Message(), tt.wantReason)
			}
			close(recorder.Events)
			var got []string
			for e := range recorder.Events {
				got = append(got, e)
			}
			want := "Warning FailedScheduling " + tt.wantReason
			if len(got) != len(members) || got[0] != want || got[1] != want {
				t.Errorf("events %q, want %q on each of the %d pods", got, want, len(members))
			}
		})
	}
}

// TestGangReasonOutsideGroupCycle pins that a pod tried on its own, even
// one that names a PodGroup, gets no gang in its reason.
func TestGangReasonOutsideGroupCycle(t *testing.T) {
	state := framework.NewCycleState()
	gangReserved(state)
	if got := gangSuffix(state, gangMember("room-0", "room", 1024)); got != "" {
		t.Errorf("gangSuffix outside a group cycle = %q, want none", got)
	}
}

// TestGangReasonInFilter pins that Filter's reason for a member that does
// not fit names its gang.
func TestGangReasonInFilter(t *testing.T) {
	p, _, _ := newTestPlugin(t)
	ctx := context.Background()
	// More than either of the node's GPUs has free.
	pod := gangMember("room-3", "room", 20000)
	state := memberState(newPlacement(framework.NewCycleState()))
	if _, st := p.PreFilter(ctx, state, pod, nil); !st.IsSuccess() {
		t.Fatalf("PreFilter: %v", st)
	}
	st := p.Filter(ctx, state, pod, nodeInfo())
	if st.IsSuccess() || !strings.HasSuffix(st.Message(), " for gang room with 0 of its pods placed") {
		t.Errorf("Filter: %v %q, want a reason naming gang room", st.Code(), st.Message())
	}
}

// TestGangReasonNoGangPolicy pins that a PodGroup without a gang policy
// gets no gang reason.
func TestGangReasonNoGangPolicy(t *testing.T) {
	p, _, _ := newTestPlugin(t)
	pg := gangPodGroup("basic", 1)
	pg.Spec.SchedulingPolicy.Gang = nil
	_, st := p.PodGroupPostFilter(context.Background(), framework.NewCycleState(), podGroupInfo(pg), nil)
	if st.Code() != fwk.Unschedulable || st.Message() != "" {
		t.Errorf("PodGroupPostFilter for a basic PodGroup: %v %q, want Unschedulable with no reason", st.Code(), st.Message())
	}
}

// gangMember is a pod of the PodGroup asking for memoryMiB of one GPU.
func gangMember(name, podGroup string, memoryMiB int64) *v1.Pod {
	pod := gpuPod(name, memoryMiB)
	pod.Spec.SchedulingGroup = &v1.PodSchedulingGroup{PodGroupName: ptr.To(podGroup)}
	return pod
}

func gangPodGroup(name string, minCount int32) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount},
		}},
	}
}

// podGroupInfo is the PodGroup as kube-scheduler's group cycle shows it.
func podGroupInfo(pg *schedulingv1beta1.PodGroup, unscheduled ...*v1.Pod) *framework.PodGroupInfo {
	return &framework.PodGroupInfo{Namespace: pg.Namespace, Name: pg.Name, Type: fwk.PodGroupKeyType, PodGroup: pg, UnscheduledPods: unscheduled}
}
