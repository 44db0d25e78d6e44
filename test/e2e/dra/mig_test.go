package dra

import (
	"slices"
	"strings"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/test/framework"
)

// migLayout is an A100 in MIG mode with the instances given.
func migLayout(instances string) string {
	return "gpus:\n- {uuid: GPU-mig-0, index: 0, model: NVIDIA A100-SXM4-80GB, memoryMiB: 81920, migInstances: [" + instances + "]}\n"
}

// TestSlicesFollowTheMIGLayout recuts a GPU's MIG instances while the
// node daemon runs, as an administrator does with nvidia-smi, and expects
// the ResourceSlice to be published again with the new instances, and the
// GPUNode to say which instance's capability devices could not be read,
// naming the file.
func TestSlicesFollowTheMIGLayout(t *testing.T) {
	c := startCluster(t, &simNode{name: "mig", gpus: migLayout("{uuid: MIG-big, profile: 7g.80gb, memoryMiB: 80896, gpuInstanceID: 0}")})
	c.waitSlice("mig", "the first layout", func(d []resourceapi.Device) bool {
		return slices.Equal(deviceNames(d), []string{"gpu-0-mig-0-0"})
	})

	writeGPUs(t, c.nodes["mig"], migLayout("{uuid: MIG-a, profile: 3g.40gb, memoryMiB: 40192, gpuInstanceID: 2}, "+
		"{uuid: MIG-b, profile: 1g.10gb, memoryMiB: 9856, gpuInstanceID: 9, capabilityError: permission denied}"))
	c.waitSlice("mig", "the new layout", func(d []resourceapi.Device) bool {
		names := deviceNames(d)
		slices.Sort(names)
		return slices.Equal(names, []string{"gpu-0-mig-2-0", "gpu-0-mig-9-0"})
	})
	framework.WaitFor(t, time.Minute, "the GPUNode to report MIG-b's capability problem", func() (bool, string) {
		gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(c.ctx, "mig", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		var problems []string
		for _, d := range gn.Status.Devices {
			if d.MIG != nil && d.MIG.CapabilityProblem != "" {
				problems = append(problems, d.UUID+": "+d.MIG.CapabilityProblem)
			}
		}
		return len(problems) == 1 && strings.HasPrefix(problems[0], "MIG-b: ") &&
			strings.Contains(problems[0], "/proc/driver/nvidia-caps/mig-minors: permission denied"), strings.Join(problems, "; ")
	})
}
