package nvmlgpu

import (
	"context"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/gpus"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu/nvmlgpu/nvmlfake"
)

// TestDiscoverDynamicMIG publishes a GPU in MIG mode as itself, with the
// profiles NVML offers (one of each name) and where each may lie, when
// instances are made on demand; a GPU not in MIG mode has no geometry.
func TestDiscoverDynamicMIG(t *testing.T) {
	node := newFakeNode(t, gpus.A100_SXM4_40GB, gpus.A100_SXM4_40GB)
	node.SetDynamicMIG(0, false)
	inv, err := New(node, Options{DynamicMIG: true}).Discover(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(inv.Devices) != 2 || inv.Devices[1].MIGGeometry != nil {
		t.Fatalf("devices %+v, want both GPUs, the second with no geometry", inv.Devices)
	}
	g := inv.Devices[0].MIGGeometry
	if g == nil || inv.Devices[0].UUID != node.UUID(0) {
		t.Fatalf("GPU 0 is %+v, want it with a geometry", inv.Devices[0])
	}
	byName := map[string]gpuv1alpha1.MIGProfile{}
	for _, p := range g.Profiles {
		if _, dup := byName[p.Name]; dup {
			t.Errorf("profile %s listed twice", p.Name)
		}
		byName[p.Name] = p
	}
	small, ok := byName["1g.5gb"]
	if !ok || small.MemoryMiB != 4864 || small.ComputePercent != 14 || len(small.Placements) != 7 || small.Placements[6] != (gpuv1alpha1.MIGPlacement{Start: 6, Size: 1}) {
		t.Errorf("1g.5gb is %+v, want 4864 MiB, 14%% and 7 placements", small)
	}
	if whole, ok := byName["7g.40gb"]; !ok || whole.ComputePercent != 100 {
		t.Errorf("7g.40gb is %+v, want 100%% of the compute", whole)
	}
}

// TestMakeAndDestroyMIG makes an instance, finds it listed with its MIG
// device, and destroys it; a compute instance that cannot be made leaves
// no GPU instance behind.
func TestMakeAndDestroyMIG(t *testing.T) {
	ctx := context.Background()
	node := newFakeNode(t, gpus.A100_SXM4_40GB, gpus.A100_SXM4_40GB)
	node.SetDynamicMIG(0, false)
	node.SetDynamicMIG(1, true)
	b := New(node, Options{DynamicMIG: true})
	inv, err := b.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	p := inv.Devices[0].MIGGeometry.Profiles[0]
	at := gpuv1alpha1.MIGPlacement{Start: 2, Size: 1}
	made, err := b.CreateMIG(ctx, node.UUID(0), p.ProfileID, at)
	if err != nil {
		t.Fatal(err)
	}
	want := gpu.MadeMIG{ProfileID: p.ProfileID, Placement: at, GPUInstanceID: made.GPUInstanceID, UUID: nvmlfake.MIGUUID(node.UUID(0), made.GPUInstanceID, 0)}
	if made != want {
		t.Errorf("made %+v, want %+v", made, want)
	}
	listed, err := b.MIGInstances(ctx, node.UUID(0))
	if err != nil || len(listed) != 1 || listed[0] != want {
		t.Errorf("listed %+v, %v; want %+v", listed, err, want)
	}
	if err := b.DestroyMIG(ctx, node.UUID(0), made.GPUInstanceID); err != nil {
		t.Fatal(err)
	}
	if n := node.MIGInstanceCount(0); n != 0 {
		t.Errorf("%d GPU instances left after destroying", n)
	}
	_, err = b.CreateMIG(ctx, node.UUID(1), p.ProfileID, at)
	if err == nil || !strings.Contains(err.Error(), "creating a compute instance") {
		t.Errorf("error %v, want the compute instance's", err)
	}
	if n := node.MIGInstanceCount(1); n != 0 {
		t.Errorf("%d GPU instances left after a failed compute instance", n)
	}
}
