package placement

import (
	"reflect"
	"testing"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

func TestHolds(t *testing.T) {
	on := func(name string, k gpuv1alpha1.ContainerKind, devices ...gpuv1alpha1.DeviceAllocation) gpuv1alpha1.ContainerAllocation {
		return gpuv1alpha1.ContainerAllocation{Name: name, Kind: k, Devices: devices}
	}
	dev := func(uuid string, memoryMiB int64, cores int32) gpuv1alpha1.DeviceAllocation {
		return gpuv1alpha1.DeviceAllocation{UUID: uuid, MemoryMiB: memoryMiB, Cores: cores}
	}
	init, sidecar, app := gpuv1alpha1.ContainerInit, gpuv1alpha1.ContainerSidecar, gpuv1alpha1.ContainerApp

	tests := []struct {
		name       string
		containers []gpuv1alpha1.ContainerAllocation
		want       []Hold
	}{
		{
			name:       "no containers hold nothing",
			containers: nil,
			want:       nil,
		},
		{
			name:       "one container holds its slice of each GPU",
			containers: []gpuv1alpha1.ContainerAllocation{on("a", app, dev("g0", 1000, 10), dev("g1", 1000, 10))},
			want:       []Hold{{UUID: "g0", MemoryMiB: 1000, Cores: 10, Shares: 1}, {UUID: "g1", MemoryMiB: 1000, Cores: 10, Shares: 1}},
		},
		{
			name: "app containers on one GPU add up",
			containers: []gpuv1alpha1.ContainerAllocation{
				on("a", app, dev("g0", 1000, 10)),
				on("b", app, dev("g0", 2000, 20)),
			},
			want: []Hold{{UUID: "g0", MemoryMiB: 3000, Cores: 30, Shares: 2}},
		},
		{
			name: "an init container and the apps hold the larger of the two",
			containers: []gpuv1alpha1.ContainerAllocation{
				on("i", init, dev("g0", 5000, 5)),
				on("a", app, dev("g0", 1000, 10)),
				on("b", app, dev("g0", 2000, 20)),
			},
			want: []Hold{{UUID: "g0", MemoryMiB: 5000, Cores: 30, Shares: 2}},
		},
		{
			name: "init containers do not add up with each other",
			containers: []gpuv1alpha1.ContainerAllocation{
				on("i1", init, dev("g0", 5000, 50)),
				on("i2", init, dev("g0", 6000, 40)),
			},
			want: []Hold{{UUID: "g0", MemoryMiB: 6000, Cores: 50, Shares: 1}},
		},
		{
			name: "an init container adds up with the sidecars before it",
			containers: []gpuv1alpha1.ContainerAllocation{
				on("s", sidecar, dev("g0", 1000, 10)),
				on("i", init, dev("g0", 5000, 50)),
				on("a", app, dev("g0", 2000, 20)),
			},
			want: []Hold{{UUID: "g0", MemoryMiB: 6000, Cores: 60, Shares: 2}},
		},
		{
			name: "an init container does not add up with the sidecars after it",
			containers: []gpuv1alpha1.ContainerAllocation{
				on("i", init, dev("g0", 5000, 50)),
				on("s", sidecar, dev("g0", 1000, 10)),
			},
			want: []Hold{{UUID: "g0", MemoryMiB: 5000, Cores: 50, Shares: 1}},
		},
		{
			name: "sidecars and apps add up",
			containers: []gpuv1alpha1.ContainerAllocation{
				on("s", sidecar, dev("g0", 1000, 10)),
				on("a", app, dev("g0", 2000, 20)),
			},
			want: []Hold{{UUID: "g0", MemoryMiB: 3000, Cores: 30, Shares: 2}},
		},
		{
			name: "a container of unknown kind counts as long-running",
			containers: []gpuv1alpha1.ContainerAllocation{
				on("x", "", dev("g0", 1000, 10)),
				on("a", app, dev("g0", 2000, 20)),
			},
			want: []Hold{{UUID: "g0", MemoryMiB: 3000, Cores: 30, Shares: 2}},
		},
		{
			name: "holds are in order of first use",
			containers: []gpuv1alpha1.ContainerAllocation{
				on("i", init, dev("g1", 100, 0)),
				on("a", app, dev("g0", 200, 0), dev("g1", 300, 0)),
			},
			want: []Hold{{UUID: "g1", MemoryMiB: 300, Shares: 1}, {UUID: "g0", MemoryMiB: 200, Shares: 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Holds(tt.containers); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Holds() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestNodeAddRemove(t *testing.T) {
	tests := []struct {
		name   string
		start  Device
		add    []Hold
		remove []Hold
		want   Device
	}{
		{
			name:  "add raises usage",
			start: gpu(0),
			add:   []Hold{{UUID: "GPU-0", MemoryMiB: 1000, Cores: 10, Shares: 1}},
			want:  with(gpu(0), used(1000, 10, 1)),
		},
		{
			name:   "remove undoes add",
			start:  with(gpu(0), used(500, 5, 1)),
			add:    []Hold{{UUID: "GPU-0", MemoryMiB: 1000, Cores: 10, Shares: 1}},
			remove: []Hold{{UUID: "GPU-0", MemoryMiB: 1000, Cores: 10, Shares: 1}},
			want:   with(gpu(0), used(500, 5, 1)),
		},
		{
			name:   "remove never goes below zero",
			start:  with(gpu(0), used(500, 5, 1)),
			remove: []Hold{{UUID: "GPU-0", MemoryMiB: 1000, Cores: 10, Shares: 2}},
			want:   gpu(0),
		},
		{
			name:   "unknown GPUs are ignored",
			start:  gpu(0),
			add:    []Hold{{UUID: "GPU-9", MemoryMiB: 1000, Cores: 10, Shares: 1}},
			remove: []Hold{{UUID: "GPU-8", MemoryMiB: 1000, Cores: 10, Shares: 1}},
			want:   gpu(0),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := node(tt.start)
			n.Add(tt.add)
			n.Remove(tt.remove)
			if n.Devices[0] != tt.want {
				t.Errorf("device = %+v, want %+v", n.Devices[0], tt.want)
			}
		})
	}
}

func TestNewNode(t *testing.T) {
	gn := &gpuv1alpha1.GPUNode{}
	gn.Name = "n1"
	gn.Spec.CordonedDevices = []string{"GPU-1"}
	gn.Status.Devices = []gpuv1alpha1.GPUDevice{
		{UUID: "GPU-0", Index: 0, Model: "A100", MemoryMiB: 40960, Cores: 100, ShareLimit: 4, NUMANode: 1, Health: gpuv1alpha1.GPUHealthy},
		{UUID: "GPU-1", Index: 1, Model: "A100", MemoryMiB: 40960, Cores: 100, ShareLimit: 4, Health: gpuv1alpha1.GPUUnhealthy},
	}
	want := Node{Name: "n1", Devices: []Device{
		{UUID: "GPU-0", Index: 0, Model: "A100", MemoryMiB: 40960, Cores: 100, ShareLimit: 4, NUMANode: 1, Healthy: true},
		{UUID: "GPU-1", Index: 1, Model: "A100", MemoryMiB: 40960, Cores: 100, ShareLimit: 4, Cordoned: true},
	}}
	if got := NewNode(gn, nil); !reflect.DeepEqual(got, want) {
		t.Errorf("NewNode() = %+v, want %+v", got, want)
	}
	var buf [2]Device
	if got := NewNode(gn, buf[:]); !reflect.DeepEqual(got, want) || &got.Devices[0] != &buf[0] {
		t.Errorf("NewNode() into a buffer of 2 = %+v, want %+v in the buffer", got, want)
	}
}
