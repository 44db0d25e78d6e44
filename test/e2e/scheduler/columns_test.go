package scheduler

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/test/framework"
)

// testColumns checks what kubectl get shows: a GPUNode's free memory,
// which moves as pods take and give back GPUs, and which GPUs each
// GPUAllocation got.
func testColumns(ctx context.Context, t *testing.T, e *env) {
	const group = "columns"
	e.addNode(ctx, t, "columns-1", group, 10, a100(0), a100(0))
	const whole = 2 * 81920
	e.waitFree(ctx, t, "columns-1", whole)

	e.createPod(ctx, t, gpuPod("col-a", group, nil, ctr{name: "main", count: 1, memory: 20000}))
	_, a := e.waitBound(ctx, t, "col-a")
	e.createPod(ctx, t, gpuPod("col-b", group, nil, ctr{name: "main", count: 2, memory: 10000}))
	_, b := e.waitBound(ctx, t, "col-b")
	e.waitFree(ctx, t, "columns-1", whole-20000-2*10000)

	for _, alloc := range []struct{ name, want string }{
		{"col-a", strconv.Itoa(int(a.Spec.Containers[0].Devices[0].Index))},
		{"col-b", "0,1"},
	} {
		row := framework.GetTableRow(ctx, t, e.cp.Kube, "/apis/gpu.tessera.dev/v1alpha1/namespaces/"+namespace+"/gpuallocations/"+alloc.name)
		if got := row["GPUs"]; got != alloc.want {
			t.Errorf("GPUs column of %s = %v, want %q (row %v)", alloc.name, got, alloc.want, row)
		}
		if _, ok := row["Pod"]; ok {
			t.Errorf("the Pod column repeats the name: %v", row)
		}
	}
	if len(b.Spec.Containers[0].Devices) != 2 {
		t.Fatalf("col-b got %v", b.Spec.Containers[0].Devices)
	}

	e.deletePod(ctx, t, "col-a")
	e.waitFree(ctx, t, "columns-1", whole-2*10000)
	e.deletePod(ctx, t, "col-b")
	e.waitFree(ctx, t, "columns-1", whole)
}

// waitFree waits until kubectl get gpunodes shows the node's free memory.
func (e *env) waitFree(ctx context.Context, t *testing.T, node string, mib int64) {
	t.Helper()
	framework.WaitFor(t, 30*time.Second, fmt.Sprintf("GPUNode %s to show %d MiB free", node, mib), func() (bool, string) {
		row := framework.GetTableRow(ctx, t, e.cp.Kube, "/apis/gpu.tessera.dev/v1alpha1/gpunodes/"+node)
		return row["Free(MiB)"] == float64(mib), fmt.Sprint(row)
	})
}
