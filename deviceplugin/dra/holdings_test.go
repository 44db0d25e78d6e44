package dra

import (
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/deviceplugin/metrics"
)

// closed says whether a Changed channel has fired.
func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestHoldingsFollowPrepareAndUnprepare(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	d := newTestDriver(t)
	if got := d.ByUUID(); len(got) != 0 {
		t.Fatalf("a fresh driver holds %+v", got)
	}
	mine := allocatedClaim("uid-1", "mine",
		result{request: "a", device: "gpu-0", memory: "30Gi", cores: 40, shares: 1},
		result{request: "b", device: "gpu-1", memory: "1Gi", shares: 2})
	other := allocatedClaim("uid-2", "other", result{request: "a", device: "gpu-0", memory: "10Gi", cores: 10, shares: 1})

	changed := d.Changed()
	if got, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{mine, other}); err != nil || got["uid-1"].Err != nil || got["uid-2"].Err != nil {
		t.Fatalf("Prepare: %v, %+v", err, got)
	}
	if !closed(changed) {
		t.Error("Changed did not fire after a claim was prepared")
	}
	want := map[string]metrics.Usage{
		"GPU-a": {MemoryBytes: 40 << 30, Cores: 50, Shares: 2},
		"GPU-b": {MemoryBytes: 1 << 30, Shares: 2},
	}
	if got := d.ByUUID(); len(got) != len(want) || got["GPU-a"] != want["GPU-a"] || got["GPU-b"] != want["GPU-b"] {
		t.Errorf("ByUUID = %+v, want %+v", got, want)
	}
	if m := d.MemoryMiB(); m["GPU-a"] != 40<<10 || m["GPU-b"] != 1<<10 {
		t.Errorf("MemoryMiB = %v", m)
	}

	// Asked again, as the kubelet does after a restart: nothing changes.
	changed = d.Changed()
	if _, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{other}); err != nil {
		t.Fatal(err)
	}
	if closed(changed) {
		t.Error("Changed fired for a claim prepared before")
	}

	if _, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{{UID: "uid-2"}}); err != nil {
		t.Fatal(err)
	}
	if !closed(changed) {
		t.Error("Changed did not fire after a claim was unprepared")
	}
	if got := d.ByUUID(); got["GPU-a"] != (metrics.Usage{MemoryBytes: 30 << 30, Cores: 40, Shares: 1}) {
		t.Errorf("after unprepare, GPU-a holds %+v", got["GPU-a"])
	}
	// A restarted daemon holds what the checkpoint recorded.
	if got := d.restart(t).ByUUID(); got["GPU-a"] != (metrics.Usage{MemoryBytes: 30 << 30, Cores: 40, Shares: 1}) || got["GPU-b"] != want["GPU-b"] {
		t.Errorf("after a restart, ByUUID = %+v", got)
	}
}
