package gpu

import (
	"context"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// MadeMIG is a MIG instance on a GPU whose instances are made on demand:
// a GPU instance and the compute instance that fills it.
type MadeMIG struct {
	// ProfileID is NVML's ID of the GPU instance's profile.
	ProfileID int32
	// Placement is the run of memory slices the instance takes.
	Placement gpuv1alpha1.MIGPlacement
	// GPUInstanceID identifies the GPU instance on its GPU.
	GPUInstanceID int
	// UUID is the MIG device's UUID, which a container is given; empty
	// when the GPU instance has no compute instance.
	UUID string
}

// MIGMaker makes and destroys MIG instances on GPUs that are in MIG mode.
// It never changes a GPU's MIG mode.
type MIGMaker interface {
	// MIGInstances lists the MIG instances on the GPU.
	MIGInstances(ctx context.Context, gpuUUID string) ([]MadeMIG, error)
	// CreateMIG makes a GPU instance of the profile at the placement, and
	// a compute instance that fills it. When the compute instance cannot
	// be made, the GPU instance is destroyed again.
	CreateMIG(ctx context.Context, gpuUUID string, profileID int32, placement gpuv1alpha1.MIGPlacement) (MadeMIG, error)
	// DestroyMIG destroys the GPU instance and its compute instances.
	DestroyMIG(ctx context.Context, gpuUUID string, gpuInstanceID int) error
}
