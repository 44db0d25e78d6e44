package nodestatus

import (
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	gpuac "github.com/tessera-gpu/tessera/generated/applyconfiguration/gpu/v1alpha1"
)

// statusApply is the server-side apply of the status the plugin owns:
// every field it sets, and of the conditions only its own, so that a
// condition another writer owns, such as the scheduler's stale mark, is
// replaced only when the plugin's differs.
func statusApply(name string, s *gpuv1alpha1.GPUNodeStatus) *gpuac.GPUNodeApplyConfiguration {
	status := gpuac.GPUNodeStatus().
		WithDriverVersion(s.DriverVersion).
		WithGPUCount(s.GPUCount).
		WithModels(s.Models).
		WithMemoryMiB(s.MemoryMiB).
		WithAllocatableMemoryMiB(s.AllocatableMemoryMiB)
	if s.KubeletAPI != "" {
		status.WithKubeletAPI(s.KubeletAPI)
	}
	if s.PodIdentification != "" {
		status.WithPodIdentification(s.PodIdentification)
	}
	if s.FreeMemoryMiB != nil {
		status.WithFreeMemoryMiB(*s.FreeMemoryMiB)
	}
	for _, c := range s.Conditions {
		status.WithConditions(metav1ac.Condition().
			WithType(c.Type).
			WithStatus(c.Status).
			WithReason(c.Reason).
			WithMessage(c.Message).
			WithLastTransitionTime(c.LastTransitionTime))
	}
	for _, d := range s.Devices {
		dev := gpuac.GPUDevice().
			WithUUID(d.UUID).
			WithIndex(d.Index).
			WithModel(d.Model).
			WithMemoryMiB(d.MemoryMiB).
			WithCores(d.Cores).
			WithShareLimit(d.ShareLimit).
			WithNUMANode(d.NUMANode).
			WithHealth(d.Health)
		if d.HealthMessage != "" {
			dev.WithHealthMessage(d.HealthMessage)
		}
		if m := d.MIG; m != nil {
			mig := gpuac.MIGInstance().
				WithParentUUID(m.ParentUUID).
				WithProfile(m.Profile).
				WithGPUInstanceID(m.GPUInstanceID).
				WithComputeInstanceID(m.ComputeInstanceID).
				WithComputePercent(m.ComputePercent)
			if m.CapabilityProblem != "" {
				mig.WithCapabilityProblem(m.CapabilityProblem)
			}
			dev.WithMIG(mig)
		}
		if g := d.MIGGeometry; g != nil {
			dev.WithMIGGeometry(geometryApply(g))
		}
		status.WithDevices(dev)
	}
	return gpuac.GPUNode(name).WithStatus(status)
}

// geometryApply is the apply configuration of a GPU's MIG geometry.
func geometryApply(g *gpuv1alpha1.MIGGeometry) *gpuac.MIGGeometryApplyConfiguration {
	out := gpuac.MIGGeometry()
	for _, p := range g.Profiles {
		profile := gpuac.MIGProfile().
			WithName(p.Name).
			WithProfileID(p.ProfileID).
			WithMemoryMiB(p.MemoryMiB).
			WithComputePercent(p.ComputePercent)
		for _, pl := range p.Placements {
			profile.WithPlacements(gpuac.MIGPlacement().WithStart(pl.Start).WithSize(pl.Size))
		}
		out.WithProfiles(profile)
	}
	return out
}
