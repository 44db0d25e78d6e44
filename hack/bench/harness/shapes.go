package harness

import (
	"fmt"
	"strings"
)

// Shape is one kind of GPU pod of the workload: a single container asking
// for Count GPUs with MemoryMiB and Cores of each.
type Shape struct {
	// Name says what the shape asks for, for logs and the report.
	Name string
	// Count is the number of distinct GPUs.
	Count int64
	// MemoryMiB is the memory on each GPU; 0 takes each GPU's whole memory.
	MemoryMiB int64
	// Cores is the percentage of each GPU's compute; 0 asks for none.
	Cores int64
	// Weight is the shape's share of the workload, relative to the others.
	Weight int
}

// DefaultMix is the workload: fractions of memory, of memory and cores,
// whole GPUs and several GPUs. On 80 GiB GPUs it needs about 0.77 GPU per
// pod, so 40,000 pods fit on 5,000 nodes × 8 GPUs.
func DefaultMix() Mix {
	return Mix{
		{Name: "1 GPU, 8 GiB", Count: 1, MemoryMiB: 8192, Weight: 6},
		{Name: "1 GPU, 20 GiB, 30% cores", Count: 1, MemoryMiB: 20480, Cores: 30, Weight: 4},
		{Name: "1 GPU, 16 GiB, 50% cores", Count: 1, MemoryMiB: 16384, Cores: 50, Weight: 2},
		{Name: "1 whole GPU", Count: 1, Weight: 4},
		{Name: "2 whole GPUs", Count: 2, Weight: 2},
		{Name: "4 GPUs, 16 GiB each", Count: 4, MemoryMiB: 16384, Weight: 1},
		{Name: "4 whole GPUs", Count: 4, Weight: 1},
	}
}

// Mix is the shapes of a workload with their weights.
type Mix []Shape

// Sequence returns n shapes, each shape's share of them in proportion to
// its weight, interleaved (smooth weighted round robin) so that no shape
// comes in one long run and every prefix of the sequence is close to the mix.
func (m Mix) Sequence(n int) []Shape {
	total := 0
	for _, s := range m {
		total += s.Weight
	}
	current := make([]int, len(m))
	out := make([]Shape, 0, n)
	for len(out) < n {
		best := 0
		for i, s := range m {
			current[i] += s.Weight
			if current[i] > current[best] {
				best = i
			}
		}
		current[best] -= total
		out = append(out, m[best])
	}
	return out
}

// Validate reports a shape that no node of the cluster could hold.
func (m Mix) Validate(gpusPerNode int) error {
	if len(m) == 0 {
		return fmt.Errorf("the workload has no shapes")
	}
	for _, s := range m {
		switch {
		case s.Weight <= 0:
			return fmt.Errorf("shape %q: weight %d must be positive", s.Name, s.Weight)
		case s.Count < 1 || s.Count > int64(gpusPerNode):
			return fmt.Errorf("shape %q: %d GPUs must be from 1 to --gpus-per-node=%d", s.Name, s.Count, gpusPerNode)
		case s.MemoryMiB < 0 || s.MemoryMiB > GPUMemoryMiB:
			return fmt.Errorf("shape %q: %d MiB must be from 0 to a GPU's %d MiB", s.Name, s.MemoryMiB, GPUMemoryMiB)
		case s.Cores < 0 || s.Cores > 100:
			return fmt.Errorf("shape %q: %d%% cores must be from 0 to 100", s.Name, s.Cores)
		}
	}
	return nil
}

// String lists the shapes with their share, for the report.
func (m Mix) String() string {
	total := 0
	for _, s := range m {
		total += s.Weight
	}
	parts := make([]string, 0, len(m))
	for _, s := range m {
		parts = append(parts, fmt.Sprintf("%d%% %s", 100*s.Weight/total, s.Name))
	}
	return strings.Join(parts, ", ")
}
