package gangfit

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeHandlerWakesOnWhatDecidesPlacement(t *testing.T) {
	base := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"pool": "b"}},
		Spec:       corev1.NodeSpec{Taints: []corev1.Taint{{Key: "gpu", Value: "a100", Effect: corev1.TaintEffectNoSchedule}}},
	}
	changed := func(change func(*corev1.Node)) *corev1.Node {
		n := base.DeepCopy()
		change(n)
		return n
	}
	tests := []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{name: "a label", node: changed(func(n *corev1.Node) { n.Labels["pool"] = "a" }), want: true},
		{name: "a taint's value", node: changed(func(n *corev1.Node) { n.Spec.Taints[0].Value = "h100" }), want: true},
		{name: "a taint taken off", node: changed(func(n *corev1.Node) { n.Spec.Taints = nil }), want: true},
		{name: "cordoned", node: changed(func(n *corev1.Node) { n.Spec.Unschedulable = true }), want: true},
		{name: "only its status", node: changed(func(n *corev1.Node) {
			n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Controller{wake: make(chan struct{}, 1)}
			c.NodeHandler().OnUpdate(base, tc.node)
			if woke := len(c.wake) == 1; woke != tc.want {
				t.Errorf("recheck woken: %t, want %t", woke, tc.want)
			}
		})
	}
	t.Run("a node joining", func(t *testing.T) {
		c := &Controller{wake: make(chan struct{}, 1)}
		c.NodeHandler().OnAdd(base, false)
		if len(c.wake) != 1 {
			t.Error("a new node did not wake recheck")
		}
	})
}
