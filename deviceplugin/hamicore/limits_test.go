package hamicore

import (
	"maps"
	"testing"
)

func TestEnv(t *testing.T) {
	tests := []struct {
		name           string
		shares         []Share
		oversubscribed bool
		want           map[string]string
	}{
		{
			name:   "memory limits follow the visible devices' order",
			shares: []Share{{UUID: "GPU-b", MemoryMiB: 4000, Cores: 30}, {UUID: "GPU-a", MemoryMiB: 2000, Cores: 30}},
			want: map[string]string{EnvVisibleDevices: "GPU-b,GPU-a", EnvMemoryLimitPrefix + "0": "4000m", EnvMemoryLimitPrefix + "1": "2000m",
				EnvSMLimit: "30", EnvSharedCache: "/tmp/c"},
		},
		{
			name:   "a scaled exclusive GPU's cores are capped at the physical 100 percent",
			shares: []Share{{UUID: "GPU-a", MemoryMiB: 1000, Cores: 200}},
			want:   map[string]string{EnvVisibleDevices: "GPU-a", EnvMemoryLimitPrefix + "0": "1000m", EnvSMLimit: "100", EnvSharedCache: "/tmp/c"},
		},
		{
			name:           "scaled memory turns over-subscription on",
			shares:         []Share{{UUID: "GPU-a", MemoryMiB: 1000}},
			oversubscribed: true,
			want:           map[string]string{EnvVisibleDevices: "GPU-a", EnvMemoryLimitPrefix + "0": "1000m", EnvSMLimit: "0", EnvSharedCache: "/tmp/c", EnvOversubscribe: "true"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Env(tt.shares, "/tmp/c", tt.oversubscribed); !maps.Equal(got, tt.want) {
				t.Errorf("Env = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMountsOnlyWithALibrary(t *testing.T) {
	if m := (Library{ContainerPath: "/usr/local/vgpu/libvgpu.so"}).Mounts(); m != nil {
		t.Errorf("mounts without a library: %v", m)
	}
	m := Library{HostPath: "/opt/libvgpu.so", ContainerPath: "/usr/local/vgpu/libvgpu.so", PreloadHostPath: "/opt/ld.so.preload"}.Mounts()
	if len(m) != 2 || m[1].ContainerPath != PreloadContainerPath || m[1].HostPath != "/opt/ld.so.preload" {
		t.Errorf("mounts %v", m)
	}
}
