package dra

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2/ktesting"

	"github.com/tessera-gpu/tessera/test/framework"
)

func TestReconcileForgetsClaimsTheAPINoLongerHoldsOnTheNode(t *testing.T) {
	// The prepared claim takes 50 GiB of GPU gpu-0's 80; the next claim
	// needs 40 GiB of it, which fits only once the first is forgotten.
	prepared := func() *resourceapi.ResourceClaim {
		return allocatedClaim("uid-1", "one", result{request: "gpu", device: "gpu-0", memory: "50Gi", shares: 1})
	}
	next := allocatedClaim("uid-2", "two", result{request: "gpu", device: "gpu-0", memory: "40Gi", shares: 1})
	tests := []struct {
		name string
		// api is what the API holds when the daemon starts again.
		api []runtime.Object
		// getFails makes reading claims fail.
		getFails bool
		wantKept bool
	}{
		{name: "the claim was deleted"},
		{
			name: "a claim of the same name was made anew",
			api: []runtime.Object{func() *resourceapi.ResourceClaim {
				c := prepared()
				c.UID = "uid-other"
				return c
			}()},
		},
		{
			name: "the claim was deallocated",
			api: []runtime.Object{func() *resourceapi.ResourceClaim {
				c := prepared()
				c.Status.Allocation = nil
				return c
			}()},
		},
		{
			name: "the claim is allocated on another node",
			api: []runtime.Object{func() *resourceapi.ResourceClaim {
				c := prepared()
				c.Status.Allocation.Devices.Results[0].Pool = "node-2"
				return c
			}()},
		},
		{name: "the claim is still allocated here", api: []runtime.Object{prepared()}, wantKept: true},
		{name: "the API cannot be read", getFails: true, wantKept: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			d := newTestDriver(t)
			if res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{prepared()}); err != nil || res["uid-1"].Err != nil {
				t.Fatalf("Prepare: %v %v", err, res["uid-1"].Err)
			}
			kube := fake.NewClientset(tt.api...)
			if tt.getFails {
				kube.PrependReactor("get", "resourceclaims", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("connection refused")
				})
			}

			d = d.restart(t)
			err := d.Reconcile(ctx, kube)
			if tt.getFails != (err != nil) {
				t.Errorf("Reconcile: %v", err)
			}
			d = d.restart(t)
			_, kept := d.state.Claims["uid-1"]
			specs := framework.FileNames(t, d.cfg.CDIDir)
			if kept != tt.wantKept || (len(specs) == 1) != tt.wantKept {
				t.Fatalf("the checkpoint holds the claim: %v, spec files %v; want the claim and its spec kept: %v", kept, specs, tt.wantKept)
			}
			res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{next})
			if err != nil {
				t.Fatal(err)
			}
			if fits := res["uid-2"].Err == nil; fits == tt.wantKept {
				t.Errorf("a claim for the rest of the GPU: %v; it must fit only once the first claim is forgotten", res["uid-2"].Err)
			}
		})
	}
}

func TestReconcileRemovesSpecsNoPreparedClaimNames(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	d := newTestDriver(t)
	kept := allocatedClaim("uid-1", "one", result{request: "gpu", device: "gpu-0", memory: "10Gi", shares: 1})
	if res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{kept}); err != nil || res["uid-1"].Err != nil {
		t.Fatalf("Prepare: %v %v", err, res["uid-1"].Err)
	}
	// The daemon crashed after writing a claim's specs and before saving
	// the checkpoint; the kubelet never heard the claim was prepared.
	crashed := allocatedClaim("uid-2", "two", result{request: "gpu", device: "gpu-1", memory: "10Gi", shares: 1})
	if _, err := d.prepare(ctx, crashed); err != nil {
		t.Fatal(err)
	}
	// Killed mid-write: the temporary file of a claim's spec, never
	// renamed, named as cdispec.WriteFile names it.
	unfinished := "tessera.dev-claim_uid-3_gpu.json.1582305329.tmp"
	// The node's own spec of its GPUs, another vendor's, and the CDI
	// library's temporary file (any writer's) are not the driver's to
	// remove.
	for _, name := range []string{unfinished, "tessera.dev-gpu.json", "example.com-claim_uid-2_gpu.json", "spec.123.tmp"} {
		if err := os.WriteFile(filepath.Join(d.cfg.CDIDir, name), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	d = d.restart(t)
	if err := d.Reconcile(ctx, fake.NewClientset(kept, crashed)); err != nil {
		t.Fatal(err)
	}
	want := []string{"example.com-claim_uid-2_gpu.json", "spec.123.tmp", "tessera.dev-claim_uid-1_gpu.json", "tessera.dev-gpu.json"}
	if got := framework.FileNames(t, d.cfg.CDIDir); !slices.Equal(got, want) {
		t.Errorf("spec files %v, want %v", got, want)
	}
}

func TestUnprepareOfAnUnknownClaimRemovesItsSpecs(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	d := newTestDriver(t)
	// Written, but the checkpoint never saved: the daemon crashed between.
	crashed := allocatedClaim("uid-2", "two",
		result{request: "a", device: "gpu-0", memory: "10Gi", shares: 1},
		result{request: "b", device: "gpu-1", memory: "10Gi", shares: 1})
	if _, err := d.prepare(ctx, crashed); err != nil {
		t.Fatal(err)
	}
	other := allocatedClaim("uid-1", "one", result{request: "gpu", device: "gpu-0", memory: "10Gi", shares: 1})
	if res, err := d.PrepareResourceClaims(ctx, []*resourceapi.ResourceClaim{other}); err != nil || res["uid-1"].Err != nil {
		t.Fatalf("Prepare: %v %v", err, res["uid-1"].Err)
	}

	d = d.restart(t)
	ref := kubeletplugin.NamespacedObject{NamespacedName: types.NamespacedName{Namespace: "default", Name: "two"}, UID: "uid-2"}
	res, err := d.UnprepareResourceClaims(ctx, []kubeletplugin.NamespacedObject{ref})
	if err != nil || res["uid-2"] != nil {
		t.Fatalf("Unprepare: %v %v", err, res["uid-2"])
	}
	if got, want := framework.FileNames(t, d.cfg.CDIDir), []string{"tessera.dev-claim_uid-1_gpu.json"}; !slices.Equal(got, want) {
		t.Errorf("spec files %v, want only the other claim's %v", got, want)
	}
}
