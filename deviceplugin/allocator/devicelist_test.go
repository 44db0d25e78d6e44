package allocator

import (
	"reflect"
	"testing"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
)

func TestDeviceListStrategies(t *testing.T) {
	lib := []*pluginapi.Mount{
		{ContainerPath: "/usr/local/vgpu/libvgpu.so", HostPath: "/opt/hami/libvgpu.so", ReadOnly: true},
		{ContainerPath: "/etc/ld.so.preload", HostPath: "/opt/hami/ld.so.preload", ReadOnly: true},
	}
	two := container("main", gpuv1alpha1.ContainerApp, dev("GPU-b", 1, 4000, 50), dev("MIG-a", 0, 2000, 50))
	limits := map[string]string{
		"CUDA_DEVICE_MEMORY_LIMIT_0":      "4000m",
		"CUDA_DEVICE_MEMORY_LIMIT_1":      "2000m",
		"CUDA_DEVICE_SM_LIMIT":            "50",
		"CUDA_DEVICE_MEMORY_SHARED_CACHE": "/tmp/tessera-vgpu-uid-main.cache",
	}
	with := func(visible string) map[string]string {
		env := map[string]string{"NVIDIA_VISIBLE_DEVICES": visible}
		for k, v := range limits {
			env[k] = v
		}
		return env
	}
	tests := []struct {
		name     string
		strategy string
		want     *pluginapi.ContainerAllocateResponse
	}{
		{
			name:     "envvar lists the UUIDs in NVIDIA_VISIBLE_DEVICES",
			strategy: config.StrategyEnvVar,
			want:     &pluginapi.ContainerAllocateResponse{Envs: with("GPU-b,MIG-a"), Mounts: lib},
		},
		{
			name: "no strategy is envvar",
			want: &pluginapi.ContainerAllocateResponse{Envs: with("GPU-b,MIG-a"), Mounts: lib},
		},
		{
			name:     "volume-mounts mounts one file per GPU and points the variable at their directory",
			strategy: config.StrategyVolumeMounts,
			want: &pluginapi.ContainerAllocateResponse{
				Envs: with("/var/run/nvidia-container-devices"),
				Mounts: append([]*pluginapi.Mount{
					{ContainerPath: "/var/run/nvidia-container-devices/GPU-b", HostPath: "/dev/null", ReadOnly: true},
					{ContainerPath: "/var/run/nvidia-container-devices/MIG-a", HostPath: "/dev/null", ReadOnly: true},
				}, lib...),
			},
		},
		{
			name:     "cdi names the spec's devices and turns the toolkit's variable off",
			strategy: config.StrategyCDI,
			want: &pluginapi.ContainerAllocateResponse{
				Envs:       with("void"),
				Mounts:     lib,
				CdiDevices: []*pluginapi.CDIDevice{{Name: "tessera.dev/gpu=GPU-b"}, {Name: "tessera.dev/gpu=MIG-a"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ResponseConfig{DeviceListStrategy: tt.strategy, Library: hamicore.Library{HostPath: "/opt/hami/libvgpu.so", ContainerPath: "/usr/local/vgpu/libvgpu.so", PreloadHostPath: "/opt/hami/ld.so.preload"}}
			if got := r.Container("uid", two); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("response\n%v\nwant\n%v", got, tt.want)
			}
		})
	}
}
