package extender

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/scheduler/metrics"
)

// victimsOf is kube-scheduler's victims of one node by UID, as a
// nodeCacheCapable extender gets them.
func victimsOf(pdbViolations int64, pods ...string) *extenderv1.MetaVictims {
	v := &extenderv1.MetaVictims{NumPDBViolations: pdbViolations}
	for _, p := range pods {
		v.Pods = append(v.Pods, &extenderv1.MetaPod{UID: "uid-" + p})
	}
	return v
}

func TestPreempt(t *testing.T) {
	// a100-1: GPU 0 holds low-a and low-b (40 GB each), GPU 1 holds other
	// (50 GB). a100-2: each GPU holds one low pod (40 GB) and one other.
	layout := func(f *fixture) {
		f.place("low-a", "uid-low-a", "a100-1-gpu0", 40000, 0)
		f.place("low-b", "uid-low-b", "a100-1-gpu0", 40000, 0)
		f.place("other", "uid-other", "a100-1-gpu1", 50000, 0)
		f.place("low-c", "uid-low-c", "a100-2-gpu0", 40000, 0)
		f.place("keep-c", "uid-keep-c", "a100-2-gpu0", 40000, 0)
		f.place("low-d", "uid-low-d", "a100-2-gpu1", 40000, 0)
		f.place("keep-d", "uid-keep-d", "a100-2-gpu1", 40000, 0)
	}
	wants60GB := podSpec("high", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=60000")
	tests := []struct {
		name string
		pod  *corev1.Pod
		args extenderv1.ExtenderPreemptionArgs
		// want are the nodes kept, with their victims.
		want map[string]*extenderv1.MetaVictims
		// outcome is what the call is counted under.
		outcome string
		// event is the words of the one event the pod gets; "" for none.
		event string
	}{{
		name: "victims that free the slice on one GPU are kept as they are",
		args: extenderv1.ExtenderPreemptionArgs{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"a100-1": victimsOf(1, "low-a", "low-b"),
		}},
		want:    map[string]*extenderv1.MetaVictims{"a100-1": victimsOf(1, "low-a", "low-b")},
		outcome: metrics.ResultSuccess,
		event:   "GPUPreemption evicting ns/low-a, ns/low-b on node a100-1 frees GPU 0 for the pod",
	}, {
		name: "a node where the victims free a bit on each GPU but no GPU fits is dropped",
		args: extenderv1.ExtenderPreemptionArgs{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"a100-2": victimsOf(0, "low-c", "low-d"),
		}},
		want:    map[string]*extenderv1.MetaVictims{},
		outcome: metrics.ResultUnschedulable,
		event:   "GPUPreemptionNotHelpful evicting ns/low-c, ns/low-d on node a100-2 would not make room: without them the node had 0/2 GPUs that fit (2 not enough memory)",
	}, {
		name: "of two candidates only the node where eviction helps is kept",
		args: extenderv1.ExtenderPreemptionArgs{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"a100-1": victimsOf(0, "low-a", "low-b"),
			"a100-2": victimsOf(0, "low-c", "low-d"),
		}},
		want:    map[string]*extenderv1.MetaVictims{"a100-1": victimsOf(0, "low-a", "low-b")},
		outcome: metrics.ResultSuccess,
		event:   "GPUPreemption evicting ns/low-a, ns/low-b on node a100-1 frees GPU 0 for the pod; evicting ns/low-c, ns/low-d on node a100-2 would not make room",
	}, {
		name: "too few victims on the GPU: dropped, never topped up",
		args: extenderv1.ExtenderPreemptionArgs{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"a100-1": victimsOf(0, "low-b"),
		}},
		want:    map[string]*extenderv1.MetaVictims{},
		outcome: metrics.ResultUnschedulable,
		event:   "evicting ns/low-b on node a100-1 would not make room",
	}, {
		name: "whole pods, from a scheduler that is not nodeCacheCapable, are answered by UID",
		args: extenderv1.ExtenderPreemptionArgs{NodeNameToVictims: map[string]*extenderv1.Victims{
			"a100-1": {Pods: []*corev1.Pod{podSpec("low-a", nil), podSpec("low-b", nil)}, NumPDBViolations: 2},
		}},
		want:    map[string]*extenderv1.MetaVictims{"a100-1": victimsOf(2, "low-a", "low-b")},
		outcome: metrics.ResultSuccess,
		event:   "frees GPU 0",
	}, {
		name: "a node whose device plugin stopped is dropped",
		args: extenderv1.ExtenderPreemptionArgs{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"stale": victimsOf(0, "low-a"),
		}},
		want:    map[string]*extenderv1.MetaVictims{},
		outcome: metrics.ResultUnschedulable,
		event:   "on node stale would not make room: device plugin heartbeat",
	}, {
		name: "a node Tessera does not know is dropped",
		args: extenderv1.ExtenderPreemptionArgs{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"cpu-only": victimsOf(0, "low-a"),
		}},
		want:    map[string]*extenderv1.MetaVictims{},
		outcome: metrics.ResultUnschedulable,
		event:   "on node cpu-only would not make room: it has no GPUNode",
	}, {
		name: "a pod that asks for no GPUs keeps kube-scheduler's victims",
		pod:  podSpec("cpu", nil, "cpu=1"),
		args: extenderv1.ExtenderPreemptionArgs{NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{
			"a100-2": victimsOf(0, "low-c"),
		}},
		want:    map[string]*extenderv1.MetaVictims{"a100-2": victimsOf(0, "low-c")},
		outcome: metrics.ResultSuccess,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			layout(f)
			tc.args.Pod = wants60GB
			if tc.pod != nil {
				tc.args.Pod = tc.pod
			}
			result, outcome, err := f.ext.Preempt(t.Context(), &tc.args)
			if err != nil {
				t.Fatal(err)
			}
			if outcome != tc.outcome {
				t.Errorf("outcome %q, want %q", outcome, tc.outcome)
			}
			if !reflect.DeepEqual(result.NodeNameToMetaVictims, tc.want) {
				t.Errorf("victims %s, want %s", describeVictims(result.NodeNameToMetaVictims), describeVictims(tc.want))
			}
			events := f.events()
			switch {
			case tc.event == "" && len(events) > 0:
				t.Errorf("events %q, want none", events)
			case tc.event != "" && (len(events) != 1 || !strings.Contains(events[0], tc.event)):
				t.Errorf("events %q, want one saying %q", events, tc.event)
			}
		})
	}
}

func describeVictims(m map[string]*extenderv1.MetaVictims) string {
	var parts []string
	for node, v := range m {
		var uids []string
		for _, p := range v.Pods {
			uids = append(uids, p.UID)
		}
		parts = append(parts, fmt.Sprintf("%s:%s (%d PDB violations)", node, strings.Join(uids, ","), v.NumPDBViolations))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// TestPreemptOneEventPerDecision pins that kube-scheduler asking again at
// every attempt of a pod does not record an event each time; a different
// decision is recorded at once, and the same one again after a while.
func TestPreemptOneEventPerDecision(t *testing.T) {
	f := newFixture(t)
	f.place("low-a", "uid-low-a", "t4-gpu0", 10000, 0)
	args := func(victims ...string) *extenderv1.ExtenderPreemptionArgs {
		return &extenderv1.ExtenderPreemptionArgs{
			Pod:                   podSpec("high", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=12000"),
			NodeNameToMetaVictims: map[string]*extenderv1.MetaVictims{"t4": victimsOf(0, victims...)},
		}
	}
	count := func(what string, want int) {
		t.Helper()
		if got := len(f.events()); got != want {
			t.Errorf("%s: %d events, want %d", what, got, want)
		}
	}
	for range 5 {
		if _, _, err := f.ext.Preempt(t.Context(), args("low-a")); err != nil {
			t.Fatal(err)
		}
	}
	count("five identical decisions", 1)
	if _, _, err := f.ext.Preempt(t.Context(), args("elsewhere")); err != nil {
		t.Fatal(err)
	}
	count("a different decision", 1)
	f.clock.Step(11 * time.Minute)
	if _, _, err := f.ext.Preempt(t.Context(), args("elsewhere")); err != nil {
		t.Fatal(err)
	}
	count("the same decision eleven minutes later", 1)
}

func TestPreemptRefuses(t *testing.T) {
	f := newFixture(t)
	if _, outcome, err := f.ext.Preempt(t.Context(), &extenderv1.ExtenderPreemptionArgs{}); err == nil || outcome != metrics.ResultInvalid {
		t.Errorf("no pod: outcome %q, err %v; want invalid", outcome, err)
	}
	bad := podSpec("bad", nil, "nvidia.com/gpu=1", "nvidia.com/gpucores=150")
	if _, outcome, err := f.ext.Preempt(t.Context(), &extenderv1.ExtenderPreemptionArgs{Pod: bad}); err == nil || outcome != metrics.ResultInvalid {
		t.Errorf("invalid request: outcome %q, err %v; want invalid", outcome, err)
	}
	f.ready = false
	ok := podSpec("ok", nil, "nvidia.com/gpu=1")
	if _, outcome, err := f.ext.Preempt(t.Context(), &extenderv1.ExtenderPreemptionArgs{Pod: ok}); err == nil || outcome != metrics.ResultError {
		t.Errorf("not ready: outcome %q, err %v; want error", outcome, err)
	}
}
