package integration

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	gpuclient "github.com/tessera-gpu/tessera/generated/clientset/versioned/typed/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// startAPI starts a control plane for the test and returns it, its
// client of Tessera's API, and a context that ends after a minute, or
// with the test.
func startAPI(t *testing.T) (*framework.ControlPlane, gpuclient.GpuV1alpha1Interface, context.Context) {
	t.Helper()
	cp := framework.Start(t, framework.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return cp, cp.Tessera.GpuV1alpha1(), ctx
}

func gpuNodeStatus(models ...string) gpuv1alpha1.GPUNodeStatus {
	status := gpuv1alpha1.GPUNodeStatus{DriverVersion: "simulated", GPUCount: int32(len(models))}
	for i, model := range models {
		status.Devices = append(status.Devices, gpuv1alpha1.GPUDevice{
			UUID: "GPU-" + model + "-" + string(rune('a'+i)), Index: int32(i), Model: model,
			MemoryMiB: 16384, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy,
		})
		status.MemoryMiB += 16384
	}
	status.AllocatableMemoryMiB = status.MemoryMiB
	status.Models = models[0]
	return status
}

func gpuAllocation(name, node string, uid types.UID, uuid string, memoryMiB int64) *gpuv1alpha1.GPUAllocation {
	return &gpuv1alpha1.GPUAllocation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: gpuv1alpha1.GPUAllocationSpec{
			PodUID: uid, NodeName: node, GPUCount: 1, GPUIndexes: "0", MemoryMiB: memoryMiB,
			Containers: []gpuv1alpha1.ContainerAllocation{{
				Name: "main", Kind: gpuv1alpha1.ContainerApp,
				Devices: []gpuv1alpha1.DeviceAllocation{{UUID: uuid, Index: 0, MemoryMiB: memoryMiB, Cores: 30}},
			}},
		},
	}
}
