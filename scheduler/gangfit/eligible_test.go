package gangfit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestHeldWhereTheFlavorRuns pins that room is held only on nodes where
// the pods could run once Kueue starts them: the template's node
// selector and the nodes' NoSchedule taints, with the node labels and
// tolerations of the flavor Kueue assigned the pod set.
func TestHeldWhereTheFlavorRuns(t *testing.T) {
	tests := []struct {
		name string
		// node is n1, the fixture's one GPU node.
		node       corev1.Node
		flavor     map[string]string
		toleration []corev1.Toleration
		selector   map[string]string
		want       string
	}{
		{name: "no flavor, no selector", want: stateReady},
		{name: "the flavor's labels are not the node's", flavor: map[string]string{"pool": "h100"}, want: stateRetry},
		{
			name: "the flavor's labels are the node's", flavor: map[string]string{"pool": "a100"},
			node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"pool": "a100"}}}, want: stateReady,
		},
		{
			name: "the template's selector is not the node's", selector: map[string]string{"zone": "b"},
			node: corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"zone": "a"}}}, want: stateRetry,
		},
		{
			name: "a taint no one tolerates",
			node: corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "team", Value: "b", Effect: corev1.TaintEffectNoSchedule}}}},
			want: stateRetry,
		},
		{
			name:       "a taint the flavor tolerates",
			node:       corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "team", Value: "b", Effect: corev1.TaintEffectNoSchedule}}}},
			toleration: []corev1.Toleration{{Key: "team", Operator: corev1.TolerationOpEqual, Value: "b", Effect: corev1.TaintEffectNoSchedule}},
			want:       stateReady,
		},
		{
			name: "a PreferNoSchedule taint",
			node: corev1.Node{Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "team", Value: "b", Effect: corev1.TaintEffectPreferNoSchedule}}}},
			want: stateReady,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			node := tt.node
			node.Name = "n1"
			f.setNode(t, &node)
			f.setFlavor(t, "gpus", tt.flavor, tt.toleration)
			key := f.setWorkloadWith(t, "small", 2, 30000, statePending, 0, func(w *workload) {
				w.Spec.PodSets[0].Template.Spec.NodeSelector = tt.selector
				w.Status.Admission = &admission{PodSetAssignments: []podSetAssignment{{Name: "main", Flavors: map[string]string{"nvidia.com/gpu": "gpus", "cpu": "gpus"}}}}
			})
			f.sync(t, key)
			if st := f.last(t); st.State != tt.want {
				t.Errorf("applied %s (%s), want %s", st.State, st.Message, tt.want)
			}
			if held := f.view.GangHeld("uid-small/main"); (held > 0) != (tt.want == stateReady) {
				t.Errorf("room held for %d pods with the check %s", held, tt.want)
			}
		})
	}
}

// TestUnknownFlavorRetried pins that a pod set whose flavor the check has
// not seen yet is sent back to the queue, not held anywhere.
func TestUnknownFlavorRetried(t *testing.T) {
	f := newFixture(t)
	f.sync(t, f.setWorkloadWith(t, "small", 1, 30000, statePending, 0, func(w *workload) {
		w.Status.Admission = &admission{PodSetAssignments: []podSetAssignment{{Name: "main", Flavors: map[string]string{"nvidia.com/gpu": "missing"}}}}
	}))
	if st := f.last(t); st.State != stateRetry {
		t.Errorf("applied %s (%s), want Retry", st.State, st.Message)
	}
}
