package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	resourceapi "k8s.io/api/resource/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/deviceplugin/metrics"
)

// gpuRow is one GPU with what is allocated on it now.
type gpuRow struct {
	node, uuid, model, health string
	index                     int32
	memoryMiB, usedMemoryMiB  int64
	cores, usedCores          int32
	shareLimit, usedShares    int32
}

// buildInventory joins the GPUs of every GPUNode with the allocations on
// them: the extender's GPUAllocations and, for nodes in DRA mode, the
// allocated ResourceClaims of Tessera's driver. Only what is held now
// counts: init containers have finished by the time a pod runs, and a
// failed allocation holds nothing.
func buildInventory(nodes []*gpuv1alpha1.GPUNode, allocations []*gpuv1alpha1.GPUAllocation, claims []*resourceapi.ResourceClaim) []gpuRow {
	type key struct{ node, uuid string }
	used := map[key]*gpuRow{}
	var rows []gpuRow
	for _, n := range nodes {
		for _, d := range n.Status.Devices {
			rows = append(rows, gpuRow{
				node: n.Name, uuid: d.UUID, model: d.Model, health: string(d.Health), index: d.Index,
				memoryMiB: d.MemoryMiB, cores: d.Cores, shareLimit: d.ShareLimit,
			})
		}
	}
	for i := range rows {
		used[key{rows[i].node, rows[i].uuid}] = &rows[i]
	}
	for _, a := range allocations {
		if a.Status.Phase == gpuv1alpha1.AllocationFailed {
			continue
		}
		for _, c := range a.Spec.Containers {
			if c.Kind == gpuv1alpha1.ContainerInit {
				continue
			}
			for _, d := range c.Devices {
				if row := used[key{a.Spec.NodeName, d.UUID}]; row != nil {
					row.usedMemoryMiB += d.MemoryMiB
					row.usedCores += d.Cores
					row.usedShares++
				}
			}
		}
	}
	claimed := dra.Allocated(claims)
	for _, n := range nodes {
		for _, d := range n.Status.Devices {
			row := used[key{n.Name, d.UUID}]
			if row == nil {
				continue
			}
			if u, ok := claimed[dra.DeviceKey{Pool: n.Name, Device: dra.DeviceName(d)}]; ok {
				row.add(u)
			}
			// A GPU whose MIG instances are made on demand is allocated by
			// its instances, each whole.
			for name, u := range dra.InstanceUse(d) {
				if _, ok := claimed[dra.DeviceKey{Pool: n.Name, Device: name}]; ok {
					row.add(u)
				}
			}
		}
	}
	slices.SortFunc(rows, func(a, b gpuRow) int {
		return cmp.Or(cmp.Compare(a.node, b.node), cmp.Compare(a.index, b.index))
	})
	return rows
}

// add adds what a DRA allocation takes of the GPU.
func (r *gpuRow) add(u metrics.Usage) {
	r.usedMemoryMiB += u.MemoryBytes >> 20
	r.usedCores += int32(u.Cores)
	r.usedShares += int32(u.Shares)
}

func printInventory(out io.Writer, rows []gpuRow) error {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "NODE\tINDEX\tUUID\tMODEL\tMEMORY(MiB)\tALLOCATED(MiB)\tCORES\tALLOCATED\tSHARES\tHEALTH")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%d\t%d\t%d\t%d\t%d/%d\t%s\n",
			r.node, r.index, r.uuid, r.model, r.memoryMiB, r.usedMemoryMiB, r.cores, r.usedCores,
			r.usedShares, r.shareLimit, r.health)
	}
	return w.Flush()
}
