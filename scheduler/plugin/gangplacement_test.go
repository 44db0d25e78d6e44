package plugin

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/tessera-gpu/tessera/scheduler/gangplace"
)

// podGroup is a PodGroup of the default namespace with its pods to place.
type podGroup struct {
	pg   *schedulingv1beta1.PodGroup
	pods []*v1.Pod
}

func (g *podGroup) GetUnscheduledPods() []*v1.Pod { return g.pods }
func (g *podGroup) GetName() string               { return g.pg.Name }
func (g *podGroup) GetNamespace() string          { return g.pg.Namespace }
func (g *podGroup) GetType() fwk.EntityKeyType    { return fwk.PodGroupKeyType }
func (g *podGroup) GetKey() string {
	return fwk.EntityKey{Type: fwk.PodGroupKeyType, Namespace: g.pg.Namespace, Name: g.pg.Name}.String()
}
func (g *podGroup) GetPodGroup() *schedulingv1beta1.PodGroup                    { return g.pg }
func (g *podGroup) GetCompositePodGroup() *schedulingv1alpha3.CompositePodGroup { return nil }
func (g *podGroup) GetChildren() []fwk.PodGroupInfo                             { return nil }

// topologyGenerator stands for kube-scheduler's TopologyPlacementGenerator.
type topologyGenerator struct{}

func (topologyGenerator) Name() string { return "TopologyPlacementGenerator" }
func (topologyGenerator) GeneratePlacements(context.Context, fwk.PodGroupCycleState, fwk.PodGroupInfo, *fwk.Placement) (*fwk.GeneratePlacementsResult, *fwk.Status) {
	return &fwk.GeneratePlacementsResult{Placements: []*fwk.Placement{{Name: "zone-a"}}}, nil
}

func TestGeneratePlacements(t *testing.T) {
	spread := func(pod *v1.Pod) { pod.Annotations = map[string]string{"tessera.dev/node-policy": "spread"} }
	elsewhere := func(pod *v1.Pod) { pod.Spec.NodeSelector = map[string]string{"pool": "other"} }
	tests := []struct {
		name     string
		change   func(*v1.Pod)
		topology bool
		want     []string
	}{
		{name: "a gang the node holds: every node, then that node", want: []string{"every node", "fewest nodes " + node}},
		{name: "the spread node policy: every node only", change: spread, want: []string{"every node"}},
		{name: "a node the pods may not run on is not proposed", change: elsewhere, want: []string{"every node"}},
		{name: "a topology constraint: kube-scheduler's placements", topology: true, want: []string{"zone-a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _, _ := newTestPlugin(t)
			p.topology = topologyGenerator{}
			g := &podGroup{pg: &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "g", Namespace: "default"}}}
			if tc.topology {
				g.pg.Spec.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{
					Topology: []schedulingv1beta1.TopologyConstraint{{Key: "zone"}},
				}
			}
			for _, name := range []string{"g-0", "g-1", "g-2"} {
				pod := gpuPod(name, 7680)
				if tc.change != nil {
					tc.change(pod)
				}
				g.pods = append(g.pods, pod)
			}
			result, status := p.GeneratePlacements(context.Background(), nil, g, &fwk.Placement{Nodes: []fwk.NodeInfo{nodeInfo()}})
			if !status.IsSuccess() {
				t.Fatalf("GeneratePlacements: %v", status.AsError())
			}
			var got []string
			for _, pl := range result.Placements {
				got = append(got, pl.Name)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("placements %q, want %q", got, tc.want)
			}
		})
	}
}

func TestNormalizePlacementScore(t *testing.T) {
	tests := []struct {
		name   string
		scores []int64
		want   []int64
	}{
		{name: "the best MaxScore, the worst MinScore, between them in proportion", scores: []int64{-4, 0, -2}, want: []int64{0, 100, 50}},
		{name: "all equal: all MaxScore", scores: []int64{7, 7}, want: []int64{100, 100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _, _ := newTestPlugin(t)
			scores := make([]fwk.PlacementScore, len(tc.scores))
			for i, s := range tc.scores {
				scores[i].Score = s
			}
			if status := p.NormalizePlacementScore(context.Background(), nil, nil, scores); !status.IsSuccess() {
				t.Fatal(status.AsError())
			}
			for i, want := range tc.want {
				if scores[i].Score != want {
					t.Errorf("score %d normalized to %d, want %d", tc.scores[i], scores[i].Score, want)
				}
			}
		})
	}
}

// proposed is a pod of a placement and its node, with its cycle state.
type proposed struct {
	pod   *v1.Pod
	state fwk.CycleState
}

func (a proposed) GetPod() *v1.Pod               { return a.pod }
func (a proposed) GetPodInfo() fwk.PodInfo       { return nil }
func (a proposed) GetNodeName() string           { return node }
func (a proposed) GetCycleState() fwk.CycleState { return a.state }

func TestScorePlacement(t *testing.T) {
	tests := []struct {
		name   string
		memory []int64
		want   gangplace.Effect
	}{
		{name: "two pods fill the node's two GPUs", memory: []int64{15360, 15360}, want: gangplace.Effect{Pods: 2, Nodes: 1}},
		{name: "two pods leave two GPUs partly used", memory: []int64{7680, 7680}, want: gangplace.Effect{Pods: 2, Nodes: 1, Fragments: 2}},
		{name: "a pod that asks for no GPUs counts as placed", memory: []int64{0}, want: gangplace.Effect{Pods: 1, Nodes: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _, _ := newTestPlugin(t)
			a := &fwk.PodGroupAssignments{Placement: &fwk.Placement{Name: "test"}}
			for i, memory := range tc.memory {
				pod := gpuPod("g-"+string(rune('0'+i)), memory)
				if memory == 0 {
					pod.Spec.Containers[0].Resources.Limits = nil
				}
				state := framework.NewCycleState()
				p.PreFilter(context.Background(), state, pod, nil)
				a.ProposedAssignments = append(a.ProposedAssignments, proposed{pod: pod, state: state})
			}
			got, status := p.ScorePlacement(context.Background(), nil, &podGroup{pg: &schedulingv1beta1.PodGroup{}}, a)
			if !status.IsSuccess() || got != tc.want.Score() {
				t.Errorf("ScorePlacement = %d (%v), want %d (%+v)", got, status, tc.want.Score(), tc.want)
			}
		})
	}
}
