package main

import "fmt"

// simNode is one simulated GPU node of the local cluster.
type simNode struct {
	name string
	gpus []simGPU
}

// simGPU is one line of a simulated-GPU file.
type simGPU struct {
	UUID      string `json:"uuid"`
	Index     int    `json:"index"`
	Model     string `json:"model"`
	MemoryMiB int64  `json:"memoryMiB"`
	NUMANode  int    `json:"numaNode"`
}

// simNodes are the local cluster's nodes: three GPU models, so that type
// selection, memory fit and both policies have something to choose from.
func simNodes() []simNode {
	gpus := func(node, model string, memoryMiB int64, count int) []simGPU {
		var out []simGPU
		for i := range count {
			out = append(out, simGPU{
				UUID:  fmt.Sprintf("GPU-%s-%d", node, i),
				Index: i, Model: model, MemoryMiB: memoryMiB, NUMANode: i * 2 / count,
			})
		}
		return out
	}
	return []simNode{
		{name: "gpu-a100", gpus: gpus("a100", "NVIDIA A100-SXM4-80GB", 81920, 4)},
		{name: "gpu-l4", gpus: gpus("l4", "NVIDIA L4", 23034, 8)},
		{name: "gpu-t4", gpus: gpus("t4", "Tesla T4", 15360, 2)},
	}
}
