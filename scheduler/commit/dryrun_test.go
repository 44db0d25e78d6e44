package commit

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	tesserafake "github.com/tessera-gpu/tessera/generated/clientset/versioned/fake"
)

// TestDryRun pins what a dry run of a pod's allocation and binding passes:
// what the real requests would be allowed, an allocation of the same name
// (the real write replaces it), and a request that only a webhook with
// side effects refused as a dry run; and what it does not: a refusal.
func TestDryRun(t *testing.T) {
	allocations := schema.GroupResource{Group: "gpu.tessera.dev", Resource: "gpuallocations"}
	unsupported := apierrors.NewBadRequest(`admission webhook "audit.example.com" does not support dry run`)
	tests := []struct {
		name          string
		allocationErr error
		bindingErr    error
		noGPUs        bool
		wantErr       string
		wantWrites    int
	}{
		{name: "both allowed", wantWrites: 2},
		{name: "a pod without GPUs has only its binding tried", noGPUs: true, wantWrites: 1},
		{name: "an allocation of the same name is there", allocationErr: apierrors.NewAlreadyExists(allocations, "p"), wantWrites: 2},
		{name: "a webhook with side effects sees no dry run", bindingErr: unsupported, wantWrites: 2},
		{name: "binding refused", bindingErr: apierrors.NewForbidden(schema.GroupResource{Resource: "pods/binding"}, "p", nil), wantErr: "binding pod default/p to node n as a dry run", wantWrites: 2},
		{name: "allocation refused", allocationErr: apierrors.NewInvalid(schema.GroupKind{Group: "gpu.tessera.dev", Kind: "GPUAllocation"}, "p", nil), wantErr: "creating GPU allocation default/p as a dry run", wantWrites: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default", UID: "uid"}}
			writes := 0
			kube := kubefake.NewClientset(pod)
			kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				writes++
				return true, nil, tt.bindingErr
			})
			tessera := tesserafake.NewClientset()
			tessera.PrependReactor("create", "gpuallocations", func(action clienttesting.Action) (bool, runtime.Object, error) {
				writes++
				if dry := action.(clienttesting.CreateActionImpl).CreateOptions.DryRun; len(dry) != 1 || dry[0] != metav1.DryRunAll {
					t.Errorf("allocation created with dryRun %v", dry)
				}
				return true, nil, tt.allocationErr
			})
			var containers []gpuv1alpha1.ContainerAllocation
			if !tt.noGPUs {
				containers = []gpuv1alpha1.ContainerAllocation{{Name: "c", Devices: []gpuv1alpha1.DeviceAllocation{{UUID: "GPU-0", MemoryMiB: 4000}}}}
			}
			c := &Committer{Kube: kube, Tessera: tessera}
			err := c.DryRun(context.Background(), pod, "n", containers, "token")
			if (err == nil) != (tt.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("DryRun: %v, want an error that says %q", err, tt.wantErr)
			}
			if writes != tt.wantWrites {
				t.Errorf("%d requests, want %d", writes, tt.wantWrites)
			}
		})
	}
}
