package drascore

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/structured"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/quota"
)

// draManager is kube-scheduler's DRA manager over fixed claims, slices and
// consumed capacity.
type draManager struct {
	fwk.SharedDRAManager
	claims   claims
	slices   []*resourceapi.ResourceSlice
	consumed structured.ConsumedCapacityCollection
	// pending are the allocations in flight, by claim.
	pending map[types.UID]*resourceapi.AllocationResult
}

func (m *draManager) ResourceClaims() fwk.ResourceClaimTracker { return claimTracker{m: m} }
func (m *draManager) ResourceSlices() fwk.ResourceSliceLister  { return sliceLister{m: m} }

type claimTracker struct {
	fwk.ResourceClaimTracker
	m *draManager
}

func (c claimTracker) Get(namespace, name string) (*resourceapi.ResourceClaim, error) {
	return c.m.claims.Get(namespace, name)
}

func (c claimTracker) GetPendingAllocation(uid types.UID) *resourceapi.AllocationResult {
	return c.m.pending[uid]
}

func (c claimTracker) List() ([]*resourceapi.ResourceClaim, error) {
	out := make([]*resourceapi.ResourceClaim, 0, len(c.m.claims))
	for _, claim := range c.m.claims {
		out = append(out, claim)
	}
	return out, nil
}

func (c claimTracker) GatherAllocatedState() (*structured.AllocatedState, error) {
	return &structured.AllocatedState{AggregatedCapacity: c.m.consumed}, nil
}

type sliceLister struct{ m *draManager }

func (s sliceLister) ListWithDeviceTaintRules() ([]*resourceapi.ResourceSlice, error) {
	return s.m.slices, nil
}

// scores runs PreScore, Score and NormalizeScore for the pod over the
// nodes, as kube-scheduler does, and returns the final score by node; ok
// is false when PreScore skipped the pod.
func scores(t *testing.T, p *Plugin, pod *v1.Pod, nodes ...string) (map[string]int64, bool) {
	t.Helper()
	ctx := context.Background()
	state := framework.NewCycleState()
	infos := make([]fwk.NodeInfo, len(nodes))
	for i, n := range nodes {
		ni := framework.NewNodeInfo()
		ni.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}})
		infos[i] = ni
	}
	status := p.PreScore(ctx, state, pod, infos)
	if status.IsSkip() {
		return nil, false
	}
	if !status.IsSuccess() {
		t.Fatalf("PreScore: %v", status)
	}
	list := make(fwk.NodeScoreList, len(nodes))
	for i, ni := range infos {
		s, status := p.Score(ctx, state, pod, ni)
		if !status.IsSuccess() {
			t.Fatalf("Score on %s: %v", nodes[i], status)
		}
		list[i] = fwk.NodeScore{Name: nodes[i], Score: s}
	}
	if status := p.NormalizeScore(ctx, state, pod, list); !status.IsSuccess() {
		t.Fatalf("NormalizeScore: %v", status)
	}
	out := map[string]int64{}
	for _, s := range list {
		out[s.Name] = s.Score
	}
	return out, true
}

func TestScoreRanksNodesByTheNodePolicy(t *testing.T) {
	const class = gpuv1alpha1.DRADriverName
	// Three nodes of two 24 GiB GPUs: "busy" holds 12 GiB and 60% of one
	// GPU's compute, "some" 2 GiB, "empty" nothing; "small" has a GPU too
	// small for the claim, which the allocator would not have passed.
	m := &draManager{
		claims: claims{
			"slice": claim("slice", exactly("gpu", class, 1, "memory", "1000Mi", "cores", "10")),
			"big":   claim("big", exactly("gpu", class, 1, "memory", "20Gi")),
			"nic":   claim("nic", exactly("nic", "nic.example.com", 1)),
		},
		slices:   []*resourceapi.ResourceSlice{slice("busy", 1, 24, 24), slice("some", 1, 24, 24), slice("empty", 1, 24, 24), slice("small", 1, 16)},
		consumed: structured.ConsumedCapacityCollection{},
	}
	for _, u := range []struct{ node, memory, cores string }{{"busy", "12Gi", "60"}, {"some", "2Gi", "0"}} {
		id, c := used(u.node, 0, u.memory, u.cores, "1")
		m.consumed[id] = c
	}
	defaults, err := decodeArgs(nil)
	if err != nil {
		t.Fatal(err)
	}
	p := newPlugin(defaults, m, quota.Fixed(nil), nil)
	withPolicy := func(claimName, key, policy string) *v1.Pod {
		pod := podOf(claimName)
		if key != "" {
			pod.Annotations = map[string]string{key: policy}
		}
		return pod
	}
	tests := []struct {
		name     string
		pod      *v1.Pod
		best     string
		worst    string
		skipped  bool
		noFitter string
	}{
		{name: "binpack by default: the busiest node first", pod: withPolicy("slice", "", ""), best: "busy", worst: "empty"},
		{name: "Tessera's annotation spreads", pod: withPolicy("slice", gpurequest.AnnotationNodePolicy, "spread"), best: "empty", worst: "busy"},
		{name: "HAMi's annotation spreads", pod: withPolicy("slice", "hami.io/node-scheduler-policy", "spread"), best: "empty", worst: "busy"},
		{name: "a node the claim does not fit scores 0", pod: withPolicy("big", "", ""), best: "busy", noFitter: "small"},
		{name: "a pod with no claim of Tessera's is not scored", pod: withPolicy("nic", "", ""), skipped: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, scored := scores(t, p, tc.pod, "busy", "some", "empty", "small")
			if scored == tc.skipped {
				t.Fatalf("scored: %v, want %v", scored, !tc.skipped)
			}
			if tc.skipped {
				return
			}
			for n, s := range got {
				if n != tc.best && s >= got[tc.best] {
					t.Errorf("node %s scored %d, not below the best node %s's %d (all: %v)", n, s, tc.best, got[tc.best], got)
				}
				if tc.worst != "" && n != tc.worst && n != "small" && s <= got[tc.worst] {
					t.Errorf("node %s scored %d, not above the worst node %s's %d (all: %v)", n, s, tc.worst, got[tc.worst], got)
				}
			}
			if tc.noFitter != "" && got[tc.noFitter] != 0 {
				t.Errorf("node %s, where the claim does not fit, scored %d, want 0", tc.noFitter, got[tc.noFitter])
			}
		})
	}
}

func TestSignPod(t *testing.T) {
	var p Plugin
	if _, status := p.SignPod(context.Background(), &v1.Pod{}); !status.IsSuccess() {
		t.Errorf("a pod with no claims: %v, want it signed", status)
	}
	if _, status := p.SignPod(context.Background(), podOf("a")); status.Code() != fwk.Unschedulable {
		t.Errorf("a pod with a claim: %v, want it refused", status)
	}
}
