package inventory

import (
	"errors"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/deviceplugin/gpu"
)

// LogMIGProblems logs each MIG instance among the devices whose capability
// devices could not be found, naming its GPU, the instance and the file.
func LogMIGProblems(logger klog.Logger, devices []gpu.Device) {
	for _, d := range devices {
		if d.MIG == nil || d.MIG.CapsProblem == nil {
			continue
		}
		p := d.MIG.CapsProblem
		logger.Error(errors.New(p.Reason), "MIG instance's capability devices not found; a container given it through CDI cannot open it",
			"gpu", d.MIG.ParentUUID, "gpuIndex", d.Index, "migInstance", d.UUID, "profile", d.MIG.Profile, "file", p.File)
	}
}
