package dra

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
	"github.com/tessera-gpu/tessera/test/framework"
)

const testNode = "node-1"

type fixedDevices []gpu.Device

func (f fixedDevices) Devices() []gpu.Device { return f }

// Changed never fires: the GPUs do not change.
func (f fixedDevices) Changed() <-chan struct{} { return nil }

func testGPUs() fixedDevices {
	return fixedDevices{
		{UUID: "GPU-a", Index: 0, Model: "NVIDIA H100", MemoryMiB: 81920, NUMANode: 0, Health: gpu.Healthy()},
		{UUID: "GPU-b", Index: 1, Model: "NVIDIA H100", MemoryMiB: 81920, NUMANode: 1, Health: gpu.Healthy()},
		{UUID: "GPU-c", Index: 2, Model: "NVIDIA H100", MemoryMiB: 81920, NUMANode: 1, Health: gpu.Unhealthy("XID 79")},
	}
}

type testDriver struct {
	*Driver
	cfg DriverConfig
}

func newTestDriver(t *testing.T, opts ...func(*DriverConfig)) testDriver {
	t.Helper()
	dir := t.TempDir()
	cfg := DriverConfig{
		NodeName: testNode,
		Devices:  testGPUs(),
		Scaling:  nodestatus.Scaling{SplitCount: 4, MemoryScaling: 1, CoreScaling: 1},
		Library:  hamicore.Library{HostPath: "/opt/hami/libvgpu.so", ContainerPath: "/usr/local/vgpu/libvgpu.so", PreloadHostPath: "/opt/hami/ld.so.preload"},
		CDIDir:   filepath.Join(dir, "cdi"),
		StateDir: dir,
	}
	for _, o := range opts {
		o(&cfg)
	}
	d, err := NewDriver(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return testDriver{d, cfg}
}

// restart is a new daemon process on the same node directories.
func (td testDriver) restart(t *testing.T) testDriver {
	t.Helper()
	d, err := NewDriver(td.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return testDriver{d, td.cfg}
}

type result struct {
	request, device string
	memory          string
	cores, shares   int64
}

func allocatedClaim(uid, name string, results ...result) *resourceapi.ResourceClaim {
	c := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID(uid)},
		Status:     resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}},
	}
	for i, r := range results {
		if r.memory == "" {
			// A device allocated whole, not shared: no share, no consumed capacity.
			c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
				Request: r.request, Driver: gpuv1alpha1.DRADriverName, Pool: testNode, Device: r.device})
			continue
		}
		c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results, resourceapi.DeviceRequestAllocationResult{
			Request: r.request, Driver: gpuv1alpha1.DRADriverName, Pool: testNode, Device: r.device,
			ShareID: ptr.To(types.UID(uid + "-share-" + string(rune('0'+i)))),
			ConsumedCapacity: map[resourceapi.QualifiedName]resource.Quantity{
				gpuv1alpha1.DRACapacityMemory: resource.MustParse(r.memory),
				gpuv1alpha1.DRACapacityCores:  *resource.NewQuantity(r.cores, resource.DecimalSI),
				gpuv1alpha1.DRACapacityShares: *resource.NewQuantity(r.shares, resource.DecimalSI),
			},
		})
	}
	return c
}

func cdiIDs(devices []kubeletplugin.Device, request string) []string {
	var out []string
	for _, d := range devices {
		if slices.Contains(d.Requests, request) {
			out = append(out, d.CDIDeviceIDs...)
		}
	}
	return out
}

// trainClaim is claim uid-1 of pod train, which two containers share, each
// through its own request: small holds 30Gi of gpu-0 (GPU-a), and big two
// GPUs, allocated b before a.
func trainClaim() *resourceapi.ResourceClaim {
	return allocatedClaim("uid-1", "train",
		result{request: "small", device: "gpu-0", memory: "30Gi", cores: 30, shares: 1},
		result{request: "big", device: "gpu-1", memory: "20Gi", cores: 50, shares: 1},
		result{request: "big", device: "gpu-0", memory: "20Gi", cores: 50, shares: 1},
	)
}

func TestPrepareGivesEachRequestItsGPUsAndLimits(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	d := newTestDriver(t)
	claim := trainClaim()
	got, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
	if err != nil || got["uid-1"].Err != nil {
		t.Fatalf("Prepare: %v, %v", err, got["uid-1"].Err)
	}
	devices := got["uid-1"].Devices
	if len(devices) != 3 {
		t.Fatalf("got %d devices, want one per allocated share: %+v", len(devices), devices)
	}
	for _, dev := range devices {
		if dev.PoolName != testNode || dev.ShareID == nil {
			t.Errorf("device %+v lacks its pool or share", dev)
		}
	}
	view := framework.CDIRuntimeView(t, d.cfg.CDIDir)
	want := map[string][]string{
		"small": {"CUDA_DEVICE_MEMORY_LIMIT_0=30720m", "CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/tessera-vgpu-uid-1_small.cache", "CUDA_DEVICE_SM_LIMIT=30", "NVIDIA_VISIBLE_DEVICES=GPU-a"},
		"big": {"CUDA_DEVICE_MEMORY_LIMIT_0=20480m", "CUDA_DEVICE_MEMORY_LIMIT_1=20480m", "CUDA_DEVICE_MEMORY_SHARED_CACHE=/tmp/tessera-vgpu-uid-1_big.cache",
			"CUDA_DEVICE_SM_LIMIT=50", "NVIDIA_VISIBLE_DEVICES=GPU-b,GPU-a"},
	}
	for request, env := range want {
		ids := cdiIDs(devices, request)
		if len(ids) != 1 {
			t.Fatalf("request %s has CDI devices %v, want exactly one", request, ids)
		}
		dev := view.GetDevice(ids[0])
		if dev == nil {
			t.Fatalf("the runtime does not find CDI device %s (has %v)", ids[0], view.ListDevices())
		}
		if !slices.Equal(dev.ContainerEdits.Env, env) {
			t.Errorf("request %s: env %v, want %v", request, dev.ContainerEdits.Env, env)
		}
		var mounts []string
		for _, m := range dev.ContainerEdits.Mounts {
			mounts = append(mounts, m.HostPath+":"+m.ContainerPath)
		}
		if !slices.Equal(mounts, []string{"/opt/hami/libvgpu.so:/usr/local/vgpu/libvgpu.so", "/opt/hami/ld.so.preload:/etc/ld.so.preload"}) {
			t.Errorf("request %s: mounts %v", request, mounts)
		}
	}
}

func TestPrepareIsIdempotentAcrossRestartsAndUnprepareCleansUp(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	d := newTestDriver(t)
	claim := allocatedClaim("uid-1", "c", result{request: "gpu", device: "gpu-0", memory: "30Gi", shares: 1})
	first, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
	if err != nil || first["uid-1"].Err != nil {
		t.Fatalf("Prepare: %v %v", err, first["uid-1"].Err)
	}
	specs, _ := filepath.Glob(filepath.Join(d.cfg.CDIDir, "*"))
	if len(specs) != 1 {
		t.Fatalf("spec files %v, want one", specs)
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(specs[0], old, old); err != nil {
		t.Fatal(err)
	}

	// The kubelet asks again after the daemon restarted, killed while it
	// saved the checkpoint once more: the write it cut short is removed.
	unfinished := filepath.Join(d.cfg.StateDir, CheckpointFile+".1582305329.tmp")
	if err := os.WriteFile(unfinished, []byte(`{"vers`), 0o600); err != nil {
		t.Fatal(err)
	}
	d = d.restart(t)
	if _, err := os.Stat(unfinished); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the checkpoint's unfinished write is still there after a restart: %v", err)
	}
	again, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
	if err != nil || again["uid-1"].Err != nil {
		t.Fatalf("Prepare again: %v %v", err, again["uid-1"].Err)
	}
	if !slices.EqualFunc(first["uid-1"].Devices, again["uid-1"].Devices, func(a, b kubeletplugin.Device) bool {
		return slices.Equal(a.CDIDeviceIDs, b.CDIDeviceIDs) && a.DeviceName == b.DeviceName && *a.ShareID == *b.ShareID
	}) {
		t.Errorf("after a restart Prepare answered %+v, before %+v", again["uid-1"].Devices, first["uid-1"].Devices)
	}
	if fi, _ := os.Stat(specs[0]); !fi.ModTime().Equal(old) {
		t.Errorf("a spec still on disk as it should be was written again at %v", fi.ModTime())
	}

	// Unprepare after another restart, with only the claim's name and UID.
	d = d.restart(t)
	ref := kubeletplugin.NamespacedObject{NamespacedName: types.NamespacedName{Namespace: "default", Name: "c"}, UID: "uid-1"}
	for range 2 {
		res, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{ref})
		if err != nil || res["uid-1"] != nil {
			t.Fatalf("Unprepare: %v %v", err, res["uid-1"])
		}
	}
	if specs, _ := filepath.Glob(filepath.Join(d.cfg.CDIDir, "*")); len(specs) != 0 {
		t.Errorf("spec files left after Unprepare: %v", specs)
	}
	if _, ok := d.restart(t).state.Claims["uid-1"]; ok {
		t.Error("the checkpoint still holds the unprepared claim")
	}
}

func TestPrepareAgainWritesSpecsThatAreMissingOrDiffer(t *testing.T) {
	tests := []struct {
		name string
		// between is what happens to the node between the two Prepare
		// calls; the daemon restarts with cfg.
		between func(t *testing.T, cfg *DriverConfig)
		// wantIDs are the CDI devices of request "big" after it.
		wantIDs []string
	}{
		{
			name: "a reboot emptied the spec directory",
			between: func(t *testing.T, cfg *DriverConfig) {
				if err := os.RemoveAll(cfg.CDIDir); err != nil {
					t.Fatal(err)
				}
			},
			wantIDs: []string{"tessera.dev/claim=uid-1_big"},
		},
		{
			name: "someone changed a spec",
			between: func(t *testing.T, cfg *DriverConfig) {
				path := filepath.Join(cfg.CDIDir, "tessera.dev-claim_uid-1_big.json")
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, []byte(strings.Replace(string(data), "GPU-b,GPU-a", "GPU-a", 1)), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			wantIDs: []string{"tessera.dev/claim=uid-1_big"},
		},
		{
			name:    "the daemon came back with the cdi device-list strategy",
			between: func(_ *testing.T, cfg *DriverConfig) { cfg.GPUCDIDevices = true },
			wantIDs: []string{"tessera.dev/claim=uid-1_big", "tessera.dev/gpu=GPU-b", "tessera.dev/gpu=GPU-a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			d := newTestDriver(t)
			claim := trainClaim()
			if res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim}); err != nil || res["uid-1"].Err != nil {
				t.Fatalf("Prepare: %v %v", err, res["uid-1"].Err)
			}
			tt.between(t, &d.cfg)

			// The checkpoint survived; the kubelet prepares the claim again.
			d = d.restart(t)
			res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
			if err != nil || res["uid-1"].Err != nil {
				t.Fatalf("Prepare again: %v %v", err, res["uid-1"].Err)
			}
			ids := cdiIDs(res["uid-1"].Devices, "big")
			if !slices.Equal(ids, tt.wantIDs) {
				t.Fatalf("request big has CDI devices %v, want %v", ids, tt.wantIDs)
			}
			view := framework.CDIRuntimeView(t, d.cfg.CDIDir)
			for request, want := range map[string]string{"small": "GPU-a", "big": "GPU-b,GPU-a"} {
				id := cdiIDs(res["uid-1"].Devices, request)[0]
				dev := view.GetDevice(id)
				if dev == nil {
					t.Fatalf("the runtime does not find CDI device %s (has %v)", id, view.ListDevices())
				}
				if d.cfg.GPUCDIDevices {
					want = "void"
				}
				if !slices.Contains(dev.ContainerEdits.Env, "NVIDIA_VISIBLE_DEVICES="+want) {
					t.Errorf("request %s: env %v, want NVIDIA_VISIBLE_DEVICES=%s", request, dev.ContainerEdits.Env, want)
				}
			}
			// The answer is kept: the next daemon gives it without a change.
			again, err := d.restart(t).PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
			if err != nil || !slices.Equal(cdiIDs(again["uid-1"].Devices, "big"), tt.wantIDs) {
				t.Errorf("after another restart: %v, CDI devices %v, want %v", err, cdiIDs(again["uid-1"].Devices, "big"), tt.wantIDs)
			}
		})
	}
}

func TestPrepareRefuses(t *testing.T) {
	tests := []struct {
		name     string
		prepared []*resourceapi.ResourceClaim
		claim    *resourceapi.ResourceClaim
		want     string
	}{
		{
			name:  "an unallocated claim",
			claim: &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x", UID: "uid-x"}},
			want:  "claim default/x is not allocated",
		},
		{
			name:  "a GPU the node does not have",
			claim: allocatedClaim("uid-x", "x", result{request: "gpu", device: "gpu-7", memory: "1Gi", shares: 1}),
			want:  "device gpu-7, which node node-1 does not have",
		},
		{
			name:  "an unhealthy GPU",
			claim: allocatedClaim("uid-x", "x", result{request: "gpu", device: "gpu-2", memory: "1Gi", shares: 1}),
			want:  "GPU gpu-2 (GPU-c), which is unhealthy",
		},
		{
			name:     "more memory than the GPU has, with the claims prepared before",
			prepared: []*resourceapi.ResourceClaim{allocatedClaim("uid-1", "one", result{request: "gpu", device: "gpu-0", memory: "50Gi", shares: 1})},
			claim:    allocatedClaim("uid-x", "x", result{request: "gpu", device: "gpu-0", memory: "40Gi", shares: 1}),
			want:     "would overcommit GPU gpu-0 (GPU-a): memory 92160 MiB of 81920 MiB",
		},
		{
			name: "more shares than the split count",
			prepared: []*resourceapi.ResourceClaim{
				allocatedClaim("uid-1", "one", result{request: "gpu", device: "gpu-1", memory: "1Gi", shares: 3}),
			},
			claim: allocatedClaim("uid-x", "x", result{request: "gpu", device: "gpu-1", memory: "1Gi", shares: 2}),
			want:  "shares 5 of 4",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			d := newTestDriver(t)
			if len(tt.prepared) > 0 {
				res, err := d.PrepareResourceClaims(ctx, tt.prepared)
				if err != nil {
					t.Fatal(err)
				}
				for uid, r := range res {
					if r.Err != nil {
						t.Fatalf("preparing %s: %v", uid, r.Err)
					}
				}
			}
			before, _ := filepath.Glob(filepath.Join(d.cfg.CDIDir, "*"))
			res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{tt.claim})
			if err != nil {
				t.Fatal(err)
			}
			if got := res[tt.claim.UID].Err; got == nil || !strings.Contains(got.Error(), tt.want) {
				t.Errorf("Prepare error %v, want one containing %q", got, tt.want)
			}
			if after, _ := filepath.Glob(filepath.Join(d.cfg.CDIDir, "*")); len(after) != len(before) {
				t.Errorf("a refused claim left spec files: %v", after)
			}
			if _, ok := d.restart(t).state.Claims[tt.claim.UID]; ok {
				t.Error("a refused claim is in the checkpoint")
			}
		})
	}
}

func TestPrepareWithTheCDIStrategyNamesEachGPUsDevice(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	d := newTestDriver(t, func(c *DriverConfig) { c.GPUCDIDevices = true; c.Scaling.MemoryScaling = 1.5 })
	claim := allocatedClaim("uid-1", "c",
		result{request: "gpus", device: "gpu-1", memory: "10Gi", cores: 20, shares: 1},
		result{request: "gpus", device: "gpu-0", memory: "10Gi", cores: 20, shares: 1})
	got, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{claim})
	if err != nil || got["uid-1"].Err != nil {
		t.Fatalf("Prepare: %v %v", err, got["uid-1"].Err)
	}
	ids := cdiIDs(got["uid-1"].Devices, "gpus")
	if len(ids) != 3 || ids[1] != "tessera.dev/gpu=GPU-b" || ids[2] != "tessera.dev/gpu=GPU-a" {
		t.Fatalf("CDI devices %v, want the request's and then each GPU's in allocation order", ids)
	}
	env := framework.CDIRuntimeView(t, d.cfg.CDIDir).GetDevice(ids[0]).ContainerEdits.Env
	for _, want := range []string{"NVIDIA_VISIBLE_DEVICES=void", "CUDA_DEVICE_MEMORY_LIMIT_1=10240m", "CUDA_OVERSUBSCRIBE=true"} {
		if !slices.Contains(env, want) {
			t.Errorf("env %v lacks %s", env, want)
		}
	}
}
