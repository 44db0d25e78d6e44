package simulated

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

const dynamicFile = `gpus:
- uuid: GPU-a
  model: NVIDIA A100-SXM4-80GB
  memoryMiB: 81920
  migGeometry:
    profiles:
    - {name: 1g.10gb, profileID: 19, memoryMiB: 9856, computePercent: 14, placements: [{start: 0, size: 1}, {start: 1, size: 1}]}
    - {name: 2g.20gb, profileID: 14, memoryMiB: 19968, computePercent: 29, placements: [{start: 0, size: 2}]}
- uuid: GPU-b
  model: NVIDIA A100-SXM4-80GB
  memoryMiB: 81920
`

// TestSimulatedDynamicMIG serves a GPU with a geometry whole only to a
// daemon with dynamicMIG, and makes, lists and destroys its instances in
// the file beside the GPU file, refusing one where another lies, as the
// driver does; a second backend over the same file, as after a restart,
// sees them.
func TestSimulatedDynamicMIG(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gpus.yaml")
	if err := os.WriteFile(path, []byte(dynamicFile), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakeClock(time.Now())
	plain, err := New(path, time.Second, clk, false).Discover(ctx)
	if err != nil || len(plain.Devices) != 1 || plain.Devices[0].UUID != "GPU-b" {
		t.Fatalf("without dynamicMIG: %+v, %v; want GPU-b alone", plain.Devices, err)
	}
	b := New(path, time.Second, clk, true)
	inv, err := b.Discover(ctx)
	if err != nil || len(inv.Devices) != 2 || inv.Devices[0].MIGGeometry == nil || len(inv.Devices[0].MIGGeometry.Profiles) != 2 {
		t.Fatalf("with dynamicMIG: %+v, %v; want GPU-a with its geometry", inv.Devices, err)
	}
	at0 := gpuv1alpha1.MIGPlacement{Start: 0, Size: 1}
	made, err := b.CreateMIG(ctx, "GPU-a", 19, at0)
	if err != nil || made.UUID == "" {
		t.Fatalf("CreateMIG: %+v, %v", made, err)
	}
	if _, err := b.CreateMIG(ctx, "GPU-a", 14, gpuv1alpha1.MIGPlacement{Start: 0, Size: 2}); err == nil || !strings.Contains(err.Error(), "has a MIG instance at memory slice 0") {
		t.Errorf("an overlapping instance: %v, want refused", err)
	}
	if _, err := b.CreateMIG(ctx, "GPU-a", 19, gpuv1alpha1.MIGPlacement{Start: 5, Size: 1}); err == nil {
		t.Error("an instance where its profile may not lie was made")
	}
	again := New(path, time.Second, clk, true)
	if _, err := again.Discover(ctx); err != nil {
		t.Fatal(err)
	}
	listed, err := again.MIGInstances(ctx, "GPU-a")
	if err != nil || len(listed) != 1 || listed[0] != made {
		t.Fatalf("listed after a restart: %+v, %v; want %+v", listed, err, made)
	}
	if err := again.DestroyMIG(ctx, "GPU-a", made.GPUInstanceID); err != nil {
		t.Fatal(err)
	}
	if listed, err := b.MIGInstances(ctx, "GPU-a"); err != nil || len(listed) != 0 {
		t.Errorf("left after destroying: %+v, %v", listed, err)
	}
}
