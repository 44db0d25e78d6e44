package integration

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestPrinterColumns asks for the Table form that kubectl get uses and
// checks the columns and a row of each kind.
func TestPrinterColumns(t *testing.T) {
	cp, client, ctx := startAPI(t)

	status := gpuNodeStatus("A100", "A100", "A100")
	status.AllocatableMemoryMiB = 32768
	status.FreeMemoryMiB = ptr.To[int64](28768)
	status.Conditions = []metav1.Condition{{
		Type: gpuv1alpha1.GPUNodeReady, Status: metav1.ConditionTrue, Reason: "Serving",
		LastTransitionTime: metav1.Now(),
	}}
	framework.CreateGPUNode(ctx, t, cp.Tessera, "node-t", &status)
	alloc, err := client.GPUAllocations("default").Create(ctx, gpuAllocation("pod-t", "node-t", "uid-t", "GPU-A100-a", 4000), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	alloc.Status.Phase = gpuv1alpha1.AllocationAllocated
	if _, err := client.GPUAllocations("default").UpdateStatus(ctx, alloc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name     string
		path     string
		wantCols []string
		wantRow  []any
	}{{
		name:     "gpunodes",
		path:     "/apis/gpu.tessera.dev/v1alpha1/gpunodes",
		wantCols: []string{"Name", "GPUs", "Model", "Memory(MiB)", "Allocatable(MiB)", "Free(MiB)", "Ready", "Reason", "Age"},
		wantRow:  []any{"node-t", float64(3), "A100", float64(49152), float64(32768), float64(28768), "True", "Serving"},
	}, {
		name:     "gpuallocations",
		path:     "/apis/gpu.tessera.dev/v1alpha1/namespaces/default/gpuallocations",
		wantCols: []string{"Name", "Node", "GPUs", "Memory(MiB)", "Phase", "Age"},
		wantRow:  []any{"pod-t", "node-t", "0", float64(4000), "Allocated"},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := framework.GetTable(ctx, t, cp.Kube, tc.path)
			var cols []string
			for _, c := range table.ColumnDefinitions {
				cols = append(cols, c.Name)
			}
			if !equalStrings(cols, tc.wantCols) {
				t.Errorf("columns = %v, want %v", cols, tc.wantCols)
			}
			if len(table.Rows) != 1 {
				t.Fatalf("got %d rows, want 1", len(table.Rows))
			}
			for i, want := range tc.wantRow {
				if got := table.Rows[0].Cells[i]; got != want {
					t.Errorf("column %s = %v (%T), want %v", cols[i], got, got, want)
				}
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
