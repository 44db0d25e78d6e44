package scheduler

import (
	"context"
	"testing"
)

// testNodePolicy checks that binpack puts a pod on the busier node and
// spread on the emptier one.
func testNodePolicy(ctx context.Context, t *testing.T, e *env) {
	const group = "nodepolicy"
	e.addNode(ctx, t, "nodepolicy-1", group, 10, a100(0), a100(0))
	e.addNode(ctx, t, "nodepolicy-2", group, 10, a100(0), a100(0))
	slice := ctr{name: "main", count: 1, memory: 40000, core: 30}

	e.createPod(ctx, t, gpuPod("np-first", group, nil, slice))
	first, _ := e.waitBound(ctx, t, "np-first")
	other := "nodepolicy-1"
	if first.Spec.NodeName == other {
		other = "nodepolicy-2"
	}

	e.createPod(ctx, t, gpuPod("np-binpack", group, map[string]string{"tessera.dev/node-policy": "binpack"}, slice))
	if pod, _ := e.waitBound(ctx, t, "np-binpack"); pod.Spec.NodeName != first.Spec.NodeName {
		t.Errorf("binpack pod went to %s, want the busier node %s", pod.Spec.NodeName, first.Spec.NodeName)
	}
	e.createPod(ctx, t, gpuPod("np-spread", group, map[string]string{"hami.io/node-scheduler-policy": "spread"}, slice))
	if pod, _ := e.waitBound(ctx, t, "np-spread"); pod.Spec.NodeName != other {
		t.Errorf("spread pod went to %s, want the emptier node %s", pod.Spec.NodeName, other)
	}
	for _, name := range []string{"np-first", "np-binpack", "np-spread"} {
		e.deletePod(ctx, t, name)
	}
}

// testGPUPolicy checks that GPU binpack shares one GPU and GPU spread
// (the default) uses another.
func testGPUPolicy(ctx context.Context, t *testing.T, e *env) {
	const group = "gpupolicy"
	e.addNode(ctx, t, "gpupolicy-1", group, 10, a100(0), a100(0), a100(0))
	slice := ctr{name: "main", count: 1, memory: 10000, core: 10}
	binpack := map[string]string{"tessera.dev/gpu-policy": "binpack"}

	tests := []struct {
		name        string
		annotations map[string]string
		sameGPU     bool
	}{
		{name: "binpack shares the busy GPU", annotations: binpack, sameGPU: true},
		{name: "spread by default takes an idle GPU", annotations: nil, sameGPU: false},
		{name: "HAMi spread annotation takes an idle GPU", annotations: map[string]string{"hami.io/gpu-scheduler-policy": "spread"}, sameGPU: false},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			first, second := "gp-"+itoa(i)+"-a", "gp-"+itoa(i)+"-b"
			e.createPod(ctx, t, gpuPod(first, group, binpack, slice))
			_, a := e.waitBound(ctx, t, first)
			e.createPod(ctx, t, gpuPod(second, group, tc.annotations, slice))
			_, b := e.waitBound(ctx, t, second)
			ga, gb := a.Spec.Containers[0].Devices[0].UUID, b.Spec.Containers[0].Devices[0].UUID
			if (ga == gb) != tc.sameGPU {
				t.Errorf("pods got GPUs %s and %s; want same GPU: %v", ga, gb, tc.sameGPU)
			}
			e.deletePod(ctx, t, first)
			e.deletePod(ctx, t, second)
		})
	}
}
