package placement

import (
	"fmt"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// gpu is an idle, healthy 80 GiB GPU with the given index, shared by up to 10.
func gpu(index int32) Device {
	return Device{
		UUID:       fmt.Sprintf("GPU-%d", index),
		Index:      index,
		Model:      "NVIDIA A100-SXM4-80GB",
		MemoryMiB:  81920,
		Cores:      100,
		ShareLimit: 10,
		Healthy:    true,
	}
}

// with returns d changed by each option.
func with(d Device, opts ...func(*Device)) Device {
	for _, o := range opts {
		o(&d)
	}
	return d
}

func used(memoryMiB int64, cores, shares int32) func(*Device) {
	return func(d *Device) { d.UsedMemoryMiB, d.UsedCores, d.UsedShares = memoryMiB, cores, shares }
}

func numa(n int32) func(*Device) { return func(d *Device) { d.NUMANode = n } }

func model(m string) func(*Device) { return func(d *Device) { d.Model = m } }

func node(devices ...Device) *Node { return &Node{Name: "node", Devices: devices} }

// idle returns n idle GPUs indexed from 0.
func idle(n int) []Device {
	ds := make([]Device, n)
	for i := range ds {
		ds[i] = gpu(int32(i))
	}
	return ds
}

// app is an App container asking for count GPUs with memory MiB and cores each.
func app(name string, count int32, memoryMiB int64, cores int32) gpurequest.ContainerRequest {
	return gpurequest.ContainerRequest{Name: name, Kind: gpuv1alpha1.ContainerApp, Count: count, MemoryMiB: memoryMiB, Cores: cores}
}

func kind(k gpuv1alpha1.ContainerKind, c gpurequest.ContainerRequest) gpurequest.ContainerRequest {
	c.Kind = k
	return c
}

func request(containers ...gpurequest.ContainerRequest) *Request {
	return &Request{Containers: containers, GPUPolicy: gpurequest.Spread}
}

// uuids lists each container's GPUs by UUID.
func uuids(assignment []gpuv1alpha1.ContainerAllocation) [][]string {
	out := make([][]string, len(assignment))
	for i, c := range assignment {
		for _, d := range c.Devices {
			out[i] = append(out[i], d.UUID)
		}
	}
	return out
}
