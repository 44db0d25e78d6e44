package harness

import (
	"strings"
	"testing"
)

func TestPlacerRules(t *testing.T) {
	tests := []struct {
		name     string
		gpus     int
		split    int
		before   []Shape // placed first, all on node 0
		shape    Shape
		wantFits bool
	}{
		{name: "a fraction fits beside another", gpus: 1, split: 10,
			before: []Shape{{Count: 1, MemoryMiB: 40960}}, shape: Shape{Count: 1, MemoryMiB: 40960}, wantFits: true},
		{name: "memory is never over-committed", gpus: 1, split: 10,
			before: []Shape{{Count: 1, MemoryMiB: 40960}}, shape: Shape{Count: 1, MemoryMiB: 40961}},
		{name: "a whole GPU takes all its memory", gpus: 1, split: 10,
			before: []Shape{{Count: 1}}, shape: Shape{Count: 1, MemoryMiB: 1}},
		{name: "a whole GPU needs a GPU with nothing on it", gpus: 1, split: 10,
			before: []Shape{{Count: 1, MemoryMiB: 1}}, shape: Shape{Count: 1}},
		{name: "cores add up to at most 100", gpus: 1, split: 10,
			before: []Shape{{Count: 1, MemoryMiB: 1, Cores: 70}}, shape: Shape{Count: 1, MemoryMiB: 1, Cores: 31}},
		{name: "a GPU with all cores taken refuses a request for none", gpus: 1, split: 10,
			before: []Shape{{Count: 1, MemoryMiB: 1, Cores: 100}}, shape: Shape{Count: 1, MemoryMiB: 1}},
		{name: "the share limit caps containers per GPU", gpus: 1, split: 2,
			before: []Shape{{Count: 1, MemoryMiB: 1}, {Count: 1, MemoryMiB: 1}}, shape: Shape{Count: 1, MemoryMiB: 1}},
		{name: "several GPUs are distinct GPUs", gpus: 4, split: 10,
			before: []Shape{{Count: 2}}, shape: Shape{Count: 3}},
		{name: "several GPUs fit on the free ones", gpus: 4, split: 10,
			before: []Shape{{Count: 2}}, shape: Shape{Count: 2}, wantFits: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewPlacer(1, tt.gpus, tt.split)
			for _, s := range tt.before {
				if _, ok := p.fit(0, s); !ok {
					t.Fatalf("setup: %+v does not fit", s)
				}
			}
			devices, ok := p.fit(0, tt.shape)
			if ok != tt.wantFits {
				t.Fatalf("fit = %v, want %v", ok, tt.wantFits)
			}
			if ok && int64(len(devices)) != tt.shape.Count {
				t.Errorf("got %d devices, want %d", len(devices), tt.shape.Count)
			}
		})
	}
}

// TestPlacerFitsTheScaleWorkload checks the scale mode's default: 40,000
// pods of the default mix on 5,000 nodes × 8 GPUs, without over-committing
// any GPU and with every device of a pod distinct.
func TestPlacerFitsTheScaleWorkload(t *testing.T) {
	const nodes, gpus, split, pods = 5000, 8, 10, 40000
	p := NewPlacer(nodes, gpus, split)
	perNode := make([]int, nodes)
	for i, s := range DefaultMix().Sequence(pods) {
		node, devices, err := p.Place(i, s)
		if err != nil {
			t.Fatalf("placing pod %d: %v", i, err)
		}
		perNode[node]++
		seen := map[string]bool{}
		for _, d := range devices {
			if seen[d.UUID] {
				t.Fatalf("pod %d got GPU %s twice", i, d.UUID)
			}
			seen[d.UUID] = true
			if !strings.HasPrefix(d.UUID, "GPU-"+NodeName(node)+"-") {
				t.Fatalf("pod %d on node %d got GPU %s of another node", i, node, d.UUID)
			}
		}
	}
	for n, node := range p.nodes {
		for g, u := range node {
			if u.memoryMiB > GPUMemoryMiB || u.cores > GPUCores || u.shares > split {
				t.Fatalf("node %d GPU %d over-committed: %+v", n, g, u)
			}
		}
	}
	if perNode[0] == 0 || perNode[nodes-1] == 0 {
		t.Errorf("pods are not spread over the nodes: first %d, last %d", perNode[0], perNode[nodes-1])
	}
}

func TestPlacerSaysWhenTheClusterIsFull(t *testing.T) {
	p := NewPlacer(2, 4, 10)
	for i := range 2 {
		if _, _, err := p.Place(i, Shape{Name: "4 whole GPUs", Count: 4}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := p.Place(2, Shape{Name: "4 whole GPUs", Count: 4})
	if err == nil || !strings.Contains(err.Error(), "--pods") {
		t.Fatalf("place on a full cluster = %v, want an error naming --pods", err)
	}
}
