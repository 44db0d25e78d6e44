package allocator

import (
	"path"
	"strings"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/tessera-gpu/tessera/deviceplugin/cdispec"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
)

// VolumeMountsDir is where the volume-mounts strategy lists a container's
// GPUs, one empty file per GPU UUID, for the NVIDIA container toolkit.
const VolumeMountsDir = "/var/run/nvidia-container-devices"

// nullDevice is the host file mounted for each GPU in the volume-mounts
// strategy: the toolkit reads only the mount's container path.
const nullDevice = "/dev/null"

// listDevices sets how the container's GPUs reach the container runtime,
// by the strategy: the UUIDs in NVIDIA_VISIBLE_DEVICES, one mount per GPU
// under VolumeMountsDir, or the CDI devices of the plugin's spec.
func listDevices(strategy string, uuids []string, resp *pluginapi.ContainerAllocateResponse) {
	switch strategy {
	case config.StrategyVolumeMounts:
		resp.Envs[hamicore.EnvVisibleDevices] = VolumeMountsDir
		for _, uuid := range uuids {
			resp.Mounts = append(resp.Mounts, &pluginapi.Mount{ContainerPath: path.Join(VolumeMountsDir, uuid), HostPath: nullDevice, ReadOnly: true})
		}
	case config.StrategyCDI:
		resp.Envs[hamicore.EnvVisibleDevices] = hamicore.NoVisibleDevices
		for _, uuid := range uuids {
			resp.CdiDevices = append(resp.CdiDevices, &pluginapi.CDIDevice{Name: cdispec.DeviceName(uuid)})
		}
	default:
		resp.Envs[hamicore.EnvVisibleDevices] = strings.Join(uuids, ",")
	}
}
