package integration

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestServerSideValidation checks that the CRD schemas as shipped make the
// API server refuse invalid objects with a message naming the field.
func TestServerSideValidation(t *testing.T) {
	cp, client, ctx := startAPI(t)

	node := framework.CreateGPUNode(ctx, t, cp.Tessera, "node-v", nil)
	if _, err := client.GPUAllocations("default").Create(ctx, gpuAllocation("valid", "node-v", "uid-v", "GPU-1", 1000), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a valid allocation: %v", err)
	}

	// writeT4 writes the node's status of one T4, with change made to the T4.
	writeT4 := func(change func(d *gpuv1alpha1.GPUDevice)) func() error {
		return func() error {
			n := node.DeepCopy()
			n.Status = gpuNodeStatus("T4")
			change(&n.Status.Devices[0])
			_, err := client.GPUNodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
			return err
		}
	}

	tests := []struct {
		name      string
		write     func() error
		wantField string
	}{{
		name:      "negative device memory",
		write:     writeT4(func(d *gpuv1alpha1.GPUDevice) { d.MemoryMiB = -1 }),
		wantField: "status.devices[0].memoryMiB",
	}, {
		name: "negative allocated cores",
		write: func() error {
			a := gpuAllocation("neg-cores", "node-v", "uid-n", "GPU-1", 1000)
			a.Spec.Containers[0].Devices[0].Cores = -5
			_, err := client.GPUAllocations("default").Create(ctx, a, metav1.CreateOptions{})
			return err
		},
		wantField: "spec.containers[0].devices[0].cores",
	}, {
		name: "phase outside the enum",
		write: func() error {
			a, err := client.GPUAllocations("default").Get(ctx, "valid", metav1.GetOptions{})
			if err != nil {
				return err
			}
			a.Status.Phase = "Running"
			_, err = client.GPUAllocations("default").UpdateStatus(ctx, a, metav1.UpdateOptions{})
			return err
		},
		wantField: "status.phase",
	}, {
		name:      "health outside the enum",
		write:     writeT4(func(d *gpuv1alpha1.GPUDevice) { d.Health = "Sick" }),
		wantField: "status.devices[0].health",
	}, {
		name: "missing pod UID",
		write: func() error {
			a := gpuAllocation("no-uid", "node-v", "", "GPU-1", 1000)
			_, err := client.GPUAllocations("default").Create(ctx, a, metav1.CreateOptions{})
			return err
		},
		wantField: "spec.podUID",
	}, {
		name: "allocation without containers",
		write: func() error {
			a := gpuAllocation("no-containers", "node-v", "uid-c", "GPU-1", 1000)
			a.Spec.Containers = nil
			_, err := client.GPUAllocations("default").Create(ctx, a, metav1.CreateOptions{})
			return err
		},
		wantField: "spec.containers",
	}, {
		name:      "share limit of zero",
		write:     writeT4(func(d *gpuv1alpha1.GPUDevice) { d.ShareLimit = 0 }),
		wantField: "status.devices[0].shareLimit",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.write()
			if !apierrors.IsInvalid(err) {
				t.Fatalf("got %v, want an Invalid error", err)
			}
			if !strings.Contains(err.Error(), tc.wantField) {
				t.Errorf("error %q does not name the field %s", err, tc.wantField)
			}
		})
	}
}
