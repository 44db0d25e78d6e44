package admission

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// noInventoryWarning is sent when no node reports GPUs, as while a cluster
// is being set up.
const noInventoryWarning = "no node reports GPUs yet: the pod stays Pending until a Tessera device plugin publishes a GPUNode"

// warnings returns one warning for each request that no node of the
// cluster, as it is now, could serve. The cluster may grow, so these are
// warnings rather than refusals. Unhealthy and cordoned GPUs count: they
// can come back.
func (a *Admitter) warnings(ctx context.Context, requests []gpurequest.ContainerRequest) []string {
	nodes, err := a.gpuNodes.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Listing GPUNodes for admission warnings")
		return nil
	}
	var unfit []gpurequest.ContainerRequest
	for _, r := range requests {
		if !fits(nodes, r) {
			unfit = append(unfit, r)
		}
	}
	if len(unfit) == 0 {
		return nil
	}
	// Only a request that does not fit pays for the whole inventory.
	inv := summarize(nodes)
	if inv.gpus == 0 {
		return []string{noInventoryWarning}
	}
	out := make([]string, 0, len(unfit))
	for _, r := range unfit {
		out = append(out, inv.warning(r))
	}
	return out
}

// inventory is the size of the cluster's GPUs, as far as warnings need it.
type inventory struct {
	gpus           int
	maxMemoryMiB   int64
	maxCores       int32
	maxGPUsPerNode int
}

func summarize(nodes []*gpuv1alpha1.GPUNode) inventory {
	var inv inventory
	for _, n := range nodes {
		devices := n.Status.Devices
		inv.gpus += len(devices)
		inv.maxGPUsPerNode = max(inv.maxGPUsPerNode, len(devices))
		for i := range devices {
			inv.maxMemoryMiB = max(inv.maxMemoryMiB, devices[i].MemoryMiB)
			inv.maxCores = max(inv.maxCores, devices[i].Cores)
		}
	}
	return inv
}

// warning says why no node can serve a request that fits none.
func (inv inventory) warning(r gpurequest.ContainerRequest) string {
	switch {
	case r.MemoryMiB > inv.maxMemoryMiB:
		return fmt.Sprintf("container %q asks for %d MiB of GPU memory, more than any GPU in the cluster has (largest: %d MiB)",
			r.Name, r.MemoryMiB, inv.maxMemoryMiB)
	case r.Cores > inv.maxCores:
		return fmt.Sprintf("container %q asks for %d GPU cores, more than any GPU in the cluster has (most: %d)",
			r.Name, r.Cores, inv.maxCores)
	case int(r.Count) > inv.maxGPUsPerNode:
		return fmt.Sprintf("container %q asks for %d GPUs, more than any node in the cluster has (most: %d)",
			r.Name, r.Count, inv.maxGPUsPerNode)
	default:
		// Every GPU is large enough on its own, so memory or cores are set.
		var each []string
		if r.MemoryMiB > 0 {
			each = append(each, fmt.Sprintf("%d MiB", r.MemoryMiB))
		}
		if r.Cores > 0 {
			each = append(each, fmt.Sprintf("%d cores", r.Cores))
		}
		return fmt.Sprintf("container %q asks for %d GPUs of at least %s each; no node in the cluster has that many",
			r.Name, r.Count, strings.Join(each, " and "))
	}
}

// fits reports whether some node has enough GPUs each large enough for the
// request, ignoring what is allocated on them.
func fits(nodes []*gpuv1alpha1.GPUNode, r gpurequest.ContainerRequest) bool {
	for _, n := range nodes {
		large := 0
		for i := range n.Status.Devices {
			d := &n.Status.Devices[i]
			if d.MemoryMiB >= r.MemoryMiB && d.Cores >= r.Cores {
				large++
			}
		}
		if large >= int(r.Count) {
			return true
		}
	}
	return false
}
