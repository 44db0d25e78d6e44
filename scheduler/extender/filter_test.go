package extender

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"

	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/waiters"
)

func TestFilter(t *testing.T) {
	all := []string{"a100-1", "a100-2", "t4", "stale", "notready", "no-gpunode"}
	tests := []struct {
		name             string
		pod              *corev1.Pod
		setup            func(f *fixture)
		nodes            []string
		wantFeasible     []string
		wantFailed       map[string]string // node -> words in the reason
		wantUnresolvable map[string]string
		wantError        string
		wantResult       string
	}{
		{
			name:         "every node with room fits",
			pod:          podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000"),
			nodes:        []string{"a100-1", "a100-2", "t4"},
			wantFeasible: []string{"a100-1", "a100-2", "t4"},
			wantResult:   metrics.ResultSuccess,
		},
		{
			name:         "a busy node says what is short",
			pod:          podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000"),
			setup:        func(f *fixture) { f.place("other", "uid-other", "t4-gpu0", 14000, 0) },
			nodes:        []string{"a100-1", "t4"},
			wantFeasible: []string{"a100-1"},
			wantFailed:   map[string]string{"t4": "node(s) had 0/1 GPUs that fit (1 not enough memory)"},
			wantResult:   metrics.ResultSuccess,
		},
		{
			name:             "more memory than any GPU has is unresolvable",
			pod:              podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=90000"),
			nodes:            []string{"a100-1", "t4"},
			wantFeasible:     []string{},
			wantUnresolvable: map[string]string{"a100-1": "not enough memory", "t4": "not enough memory"},
			wantResult:       metrics.ResultUnschedulable,
		},
		{
			name:             "GPU type annotation rules a node out",
			pod:              podSpec("p", map[string]string{"nvidia.com/use-gputype": "T4"}, "nvidia.com/gpu=1"),
			nodes:            []string{"a100-1", "t4"},
			wantFeasible:     []string{"t4"},
			wantUnresolvable: map[string]string{"a100-1": "type mismatch"},
			wantResult:       metrics.ResultSuccess,
		},
		{
			name:             "nodes that take no GPU pods say why",
			pod:              podSpec("p", nil, "nvidia.com/gpu=1"),
			nodes:            all,
			wantFeasible:     []string{"a100-1", "a100-2", "t4"},
			wantUnresolvable: map[string]string{"stale": "device plugin heartbeat is stale (Lease last renewed 3m0s ago)", "notready": "device plugin is not ready: kubelet is gone", "no-gpunode": "node has no GPUNode"},
			wantResult:       metrics.ResultSuccess,
		},
		{
			name:         "room the fit gate released another pod for is taken",
			pod:          podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000"),
			setup:        func(f *fixture) { f.ext.FitGate = claimedGate{"a100-1": {uid: "uid-other", holds: both80("a100-1")}} },
			nodes:        []string{"a100-1", "a100-2"},
			wantFeasible: []string{"a100-2"},
			wantFailed:   map[string]string{"a100-1": waiters.Claimed},
			wantResult:   metrics.ResultSuccess,
		},
		{
			name:         "room the fit gate released the pod itself for is its own",
			pod:          podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000"),
			setup:        func(f *fixture) { f.ext.FitGate = claimedGate{"a100-1": {uid: "uid-p", holds: both80("a100-1")}} },
			nodes:        []string{"a100-1", "a100-2"},
			wantFeasible: []string{"a100-1", "a100-2"},
			wantResult:   metrics.ResultSuccess,
		},
		{
			name: "the pod's own allocation from an unfinished bind does not count",
			pod:  podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000"),
			setup: func(f *fixture) {
				f.place("p", "uid-p", "t4-gpu0", 15000, 0)
			},
			nodes:        []string{"t4"},
			wantFeasible: []string{"t4"},
			wantResult:   metrics.ResultSuccess,
		},
		{
			name:             "a GPU pod of a PodGroup is left to tessera-scheduler",
			pod:              inPodGroup(podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=10000"), "trainer"),
			nodes:            []string{"a100-1", "t4"},
			wantFeasible:     []string{},
			wantUnresolvable: map[string]string{"a100-1": "PodGroup trainer", "t4": "only by tessera-scheduler"},
			wantResult:       metrics.ResultUnschedulable,
		},
		{
			name:         "a pod of a PodGroup without GPU requests fits everywhere",
			pod:          inPodGroup(podSpec("p", nil, "cpu=1"), "trainer"),
			nodes:        []string{"a100-1", "t4"},
			wantFeasible: []string{"a100-1", "t4"},
			wantResult:   metrics.ResultSuccess,
		},
		{
			name:         "a pod without GPU requests fits everywhere",
			pod:          podSpec("p", nil, "cpu=1"),
			nodes:        all,
			wantFeasible: all,
			wantResult:   metrics.ResultSuccess,
		},
		{
			name:       "a fractional quantity names the field",
			pod:        podSpec("p", nil, "nvidia.com/gpumem=1500m"),
			nodes:      all,
			wantError:  "spec.containers[0].resources.limits[nvidia.com/gpumem]: Invalid value: \"1500m\": must be a whole number",
			wantResult: metrics.ResultInvalid,
		},
		{
			name:       "cores over 100 name the field and the limit",
			pod:        podSpec("p", nil, "nvidia.com/gpucores=150"),
			nodes:      all,
			wantError:  "nvidia.com/gpucores]: Invalid value: \"150\": must be at most 100",
			wantResult: metrics.ResultInvalid,
		},
		{
			name:       "an unknown policy annotation names the annotation",
			pod:        podSpec("p", map[string]string{"tessera.dev/node-policy": "best"}, "nvidia.com/gpu=1"),
			nodes:      all,
			wantError:  "metadata.annotations[tessera.dev/node-policy]: Unsupported value: \"best\"",
			wantResult: metrics.ResultInvalid,
		},
		{
			// The webhook would have added the count; a pod it never saw
			// (labelled tessera.dev/webhook=disabled) would be placed and
			// never served by the kubelet, holding its node's turn.
			name:       "a slice without a GPU count says what to add",
			pod:        podSpec("p", nil, "nvidia.com/gpumem=1000"),
			nodes:      all,
			wantError:  "limits[nvidia.com/gpu]: Required value: the container asks for nvidia.com/gpumem but not for nvidia.com/gpu",
			wantResult: metrics.ResultInvalid,
		},
		{
			name:       "a privileged container asking for a slice is refused",
			pod:        privileged(podSpec("p", nil, "nvidia.com/gpu=1", "nvidia.com/gpumem=1000")),
			nodes:      all,
			wantError:  "spec.containers[0].securityContext.privileged: Forbidden",
			wantResult: metrics.ResultInvalid,
		},
		{
			name:       "a Tessera key and its HAMi alias that disagree are refused",
			pod:        podSpec("p", map[string]string{"tessera.dev/gpu-type": "A100", "nvidia.com/use-gputype": "T4"}, "nvidia.com/gpu=1"),
			nodes:      all,
			wantError:  `disagrees with tessera.dev/gpu-type ("A100")`,
			wantResult: metrics.ResultInvalid,
		},
		{
			name:       "not synced yet",
			pod:        podSpec("p", nil, "nvidia.com/gpu=1"),
			setup:      func(f *fixture) { f.ready = false },
			nodes:      all,
			wantError:  "extender is not ready",
			wantResult: metrics.ResultError,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			if tc.setup != nil {
				tc.setup(f)
			}
			before := f.usage("t4")
			names := tc.nodes
			result, outcome := f.filter(&extenderv1.ExtenderArgs{Pod: tc.pod, NodeNames: &names})
			if outcome != tc.wantResult {
				t.Errorf("result = %s, want %s", outcome, tc.wantResult)
			}
			if !reflect.DeepEqual(f.usage("t4"), before) {
				t.Errorf("filter changed the view: %v, was %v", f.usage("t4"), before)
			}
			if tc.wantError != "" {
				if !strings.Contains(result.Error, tc.wantError) {
					t.Errorf("error = %q, want it to contain %q", result.Error, tc.wantError)
				}
				return
			}
			if result.Error != "" {
				t.Fatalf("error = %q", result.Error)
			}
			if result.NodeNames == nil || !reflect.DeepEqual(*result.NodeNames, tc.wantFeasible) {
				t.Errorf("feasible = %v, want %v", result.NodeNames, tc.wantFeasible)
			}
			checkReasons(t, "failed", result.FailedNodes, tc.wantFailed)
			checkReasons(t, "unresolvable", result.FailedAndUnresolvableNodes, tc.wantUnresolvable)
		})
	}
}

func checkReasons(t *testing.T, what string, got extenderv1.FailedNodesMap, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s nodes = %v, want %v", what, got, want)
	}
	for node, words := range want {
		if !strings.Contains(got[node], words) {
			t.Errorf("%s reason for %s = %q, want it to contain %q", what, node, got[node], words)
		}
	}
}

func TestFilterWholeNodes(t *testing.T) {
	f := newFixture(t)
	nodes := &corev1.NodeList{Items: []corev1.Node{
		{ObjectMeta: metav1.ObjectMeta{Name: "a100-1"}}, {ObjectMeta: metav1.ObjectMeta{Name: "no-gpunode"}},
	}}
	result, _ := f.filter(&extenderv1.ExtenderArgs{Pod: podSpec("p", nil, "nvidia.com/gpu=1"), Nodes: nodes})
	if result.NodeNames != nil || result.Nodes == nil || len(result.Nodes.Items) != 1 || result.Nodes.Items[0].Name != "a100-1" {
		t.Errorf("a scheduler sending whole nodes got %+v", result)
	}
}

// claimedGate is a fit gate that released one pod for room on each node
// it names.
type claimedGate map[string]struct {
	uid   types.UID
	holds []placement.Hold
}

func (claimedGate) Started(*corev1.Pod, *placement.Request) {}
func (claimedGate) Ended(types.UID, string)                 {}
func (claimedGate) Freed(string)                            {}

func (g claimedGate) Claimed(node string, except types.UID, _ int32) []placement.Hold {
	if c, ok := g[node]; ok && c.uid != except {
		return c.holds
	}
	return nil
}

// both80 holds all the memory of both GPUs of an a100 node.
func both80(node string) []placement.Hold {
	return []placement.Hold{{UUID: node + "-gpu0", MemoryMiB: 80000}, {UUID: node + "-gpu1", MemoryMiB: 80000}}
}
