package harness

import (
	"fmt"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// Placer places pods on the simulated cluster without a scheduler, for the
// scale mode, keeping every GPU within its memory, cores and share limit by
// the rules of DESIGN.md. It is simple, not clever: pods go round-robin
// over the nodes, each on the first node from its turn that fits it, and
// on the first GPUs of that node that do.
type Placer struct {
	split int
	nodes [][]gpuUse
}

// gpuUse is what is allocated on one GPU.
type gpuUse struct {
	memoryMiB int64
	cores     int64
	shares    int
}

// NewPlacer is a placer over nodes empty nodes of gpusPerNode GPUs, each
// shared by at most split containers.
func NewPlacer(nodes, gpusPerNode, split int) *Placer {
	p := &Placer{split: split, nodes: make([][]gpuUse, nodes)}
	for i := range p.nodes {
		p.nodes[i] = make([]gpuUse, gpusPerNode)
	}
	return p
}

// Place puts the i-th pod, of shape s, on a node and returns the node's
// index and the devices the pod's container gets.
func (p *Placer) Place(i int, s Shape) (int, []gpuv1alpha1.DeviceAllocation, error) {
	for k := range p.nodes {
		node := (i + k) % len(p.nodes)
		if devices, ok := p.fit(node, s); ok {
			return node, devices, nil
		}
	}
	return 0, nil, fmt.Errorf("pod %d (%s) fits on no node: the cluster is full; lower --pods or raise --nodes", i, s.Name)
}

// fit takes the shape's GPUs on the node if it has enough that fit.
func (p *Placer) fit(node int, s Shape) ([]gpuv1alpha1.DeviceAllocation, bool) {
	memory := s.MemoryMiB
	if memory == 0 {
		memory = GPUMemoryMiB
	}
	gpus := p.nodes[node]
	chosen := make([]int, 0, s.Count)
	for g := range gpus {
		u := gpus[g]
		switch {
		case u.shares >= p.split:
		case u.memoryMiB+memory > GPUMemoryMiB:
		case s.Cores > 0 && u.cores+s.Cores > GPUCores:
		case s.Cores == 0 && u.cores >= GPUCores:
		default:
			chosen = append(chosen, g)
		}
		if int64(len(chosen)) == s.Count {
			break
		}
	}
	if int64(len(chosen)) < s.Count {
		return nil, false
	}
	devices := make([]gpuv1alpha1.DeviceAllocation, 0, len(chosen))
	for _, g := range chosen {
		gpus[g].memoryMiB += memory
		gpus[g].cores += s.Cores
		gpus[g].shares++
		devices = append(devices, gpuv1alpha1.DeviceAllocation{
			UUID: GPUUUID(NodeName(node), g), Index: int32(g), MemoryMiB: memory, Cores: int32(s.Cores),
		})
	}
	return devices, true
}
