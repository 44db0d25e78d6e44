package queue

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/hack/bench/harness"
)

// fragmentSizesMiB are the memory an earlier pod leaves free on a GPU in
// queue mode, one picked at random for every GPU: each holds a pod of
// some of queueMix's shapes and not of others.
func fragmentSizesMiB() []int64 { return []int64{8192, 12288, 16384, 20480, 24576, 32768} }

// queueMix are the shapes of queue mode's Jobs, all of one shape per Job.
// Every shape asks for its memory in MiB, so that Kueue's quota on
// gpu.tessera.dev/memory counts all of it.
func queueMix() harness.Mix {
	return harness.Mix{
		{Name: "1 GPU, 8 GiB", Count: 1, MemoryMiB: 8192, Weight: 3},
		{Name: "1 GPU, 12 GiB, 20% cores", Count: 1, MemoryMiB: 12288, Cores: 20, Weight: 2},
		{Name: "1 GPU, 20 GiB, 30% cores", Count: 1, MemoryMiB: 20480, Cores: 30, Weight: 2},
		{Name: "2 GPUs, 16 GiB each", Count: 2, MemoryMiB: 16384, Weight: 1},
	}
}

// fragments is the cluster queue mode starts from: the memory left free
// on each GPU of each node by the one earlier pod that runs there.
type fragments [][]int64

// newFragments picks every GPU's free memory from fragmentSizesMiB with
// a generator seeded by seed, so that both runs start alike.
func newFragments(nodes, gpusPerNode int, seed uint64) fragments {
	rng := rand.New(rand.NewPCG(seed, seed))
	sizes := fragmentSizesMiB()
	f := make(fragments, nodes)
	for n := range f {
		f[n] = make([]int64, gpusPerNode)
		for g := range f[n] {
			f[n][g] = sizes[rng.IntN(len(sizes))]
		}
	}
	return f
}

// freeMiB is the memory left free on every GPU together.
func (f fragments) freeMiB() int64 {
	var total int64
	for _, gpus := range f {
		for _, free := range gpus {
			total += free
		}
	}
	return total
}

// gpus is how many GPUs the cluster has.
func (f fragments) gpus() int {
	n := 0
	for _, gpus := range f {
		n += len(gpus)
	}
	return n
}

// quota is the ClusterQueue's nominal quota: exactly the memory the
// fragments leave, and GPUs and cores that never bind first (every share
// and every core the earlier pods left). Kueue then admits Jobs whose
// totals fit the free memory, as if it were one pool.
func (f fragments) quota(split int) corev1.ResourceList {
	q := func(v int64) resource.Quantity { return *resource.NewQuantity(v, resource.DecimalSI) }
	gpus := int64(f.gpus())
	return corev1.ResourceList{
		gpuv1alpha1.QuotaMemory: q(f.freeMiB()),
		gpuv1alpha1.QuotaGPUs:   q(gpus * int64(split-1)),
		gpuv1alpha1.QuotaCores:  q(gpus * harness.GPUCores),
	}
}

// String counts the GPUs of each free size, for the report.
func (f fragments) String() string {
	count := map[int64]int{}
	for _, gpus := range f {
		for _, free := range gpus {
			count[free]++
		}
	}
	sizes := fragmentSizesMiB()
	slices.Sort(sizes)
	parts := make([]string, 0, len(sizes))
	for _, s := range sizes {
		parts = append(parts, fmt.Sprintf("%d GiB × %d", s/1024, count[s]))
	}
	return "free per GPU: " + strings.Join(parts, ", ")
}

// fragment creates the earlier pods, one on every GPU taking all but the
// GPU's fragment of its memory and none of its cores, already running
// with their Allocated GPUAllocations, named from the first pod on.
func fragment(ctx context.Context, env *harness.ClusterEnv, f fragments, workers int) error {
	start := time.Now()
	gpusPerNode := len(f[0])
	err := harness.ForEach(ctx, f.gpus(), workers, func(ctx context.Context, i int) error {
		n, g := i/gpusPerNode, i%gpusPerNode
		used := harness.GPUMemoryMiB - f[n][g]
		pod := harness.NewPod(harness.PodName(i), env.SchedulerName, harness.Shape{Count: 1, MemoryMiB: used}, harness.FormSlices)
		pod.Spec.NodeName = harness.NodeName(n)
		return harness.CreateAllocatedPod(ctx, env, pod, []gpuv1alpha1.DeviceAllocation{{
			UUID: harness.GPUUUID(pod.Spec.NodeName, g), Index: int32(g), MemoryMiB: used,
		}})
	})
	if err != nil {
		return fmt.Errorf("placing the earlier pods: %w", err)
	}
	klog.FromContext(ctx).Info("Fragmented the cluster", "pods", f.gpus(), "freeMiB", f.freeMiB(), "fragments", f.String(),
		"duration", time.Since(start).Round(time.Millisecond))
	return nil
}
