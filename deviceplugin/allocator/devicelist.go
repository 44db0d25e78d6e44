package allocator

import (
	"path"
	"strings"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/tessera-gpu/tessera/deviceplugin/cdispec"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
)

// VolumeMountsDir is where the volume-mounts strategy lists a container's
// GPUs, one empty file per GPU UUID, for the NVIDIA container toolkit.
const VolumeMountsDir = "/var/run/nvidia-container-devices"

// noDevices tells the NVIDIA container toolkit's own injection to add no
// GPU: the CDI spec already carries them, and CUDA images set
// NVIDIA_VISIBLE_DEVICES=all, which would otherwise hand a container every
// GPU of the node where the toolkit still honours the variable.
const noDevices = "void"

// nullDevice is the host file mounted for each GPU in the volume-mounts
// strategy: the toolkit reads only the mount's container path.
const nullDevice = "/dev/null"

// listDevices sets how the container's GPUs reach the container runtime,
// by the strategy: the UUIDs in NVIDIA_VISIBLE_DEVICES, one mount per GPU
// under VolumeMountsDir, or the CDI devices of the plugin's spec.
func listDevices(strategy string, uuids []string, resp *pluginapi.ContainerAllocateResponse) {
	switch strategy {
	case config.StrategyVolumeMounts:
		resp.Envs[EnvVisibleDevices] = VolumeMountsDir
		for _, uuid := range uuids {
			resp.Mounts = append(resp.Mounts, &pluginapi.Mount{ContainerPath: path.Join(VolumeMountsDir, uuid), HostPath: nullDevice, ReadOnly: true})
		}
	case config.StrategyCDI:
		resp.Envs[EnvVisibleDevices] = noDevices
		for _, uuid := range uuids {
			resp.CdiDevices = append(resp.CdiDevices, &pluginapi.CDIDevice{Name: cdispec.DeviceName(uuid)})
		}
	default:
		resp.Envs[EnvVisibleDevices] = strings.Join(uuids, ",")
	}
}
