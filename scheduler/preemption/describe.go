package preemption

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// Reasons of the events a pod that does not fit without preemption gets.
const (
	// ReasonPreempting is a Normal event: evicting the pods it names makes
	// room for the pod.
	ReasonPreempting = "GPUPreemption"
	// ReasonNotHelpful is a Warning event: no eviction makes room for the
	// pod, and why.
	ReasonNotHelpful = "GPUPreemptionNotHelpful"
)

// maxNamed is the most pods an event names; the rest are counted.
const maxNamed = 5

// DescribeEviction words what evicting victims (namespace/name) on a node
// gives the pod, such as "evicting ns/a, ns/b on node n frees GPU 2 for the
// pod"; containers, the GPUs the pod would get, may be nil when not known.
func DescribeEviction(node string, victims []string, containers []gpuv1alpha1.ContainerAllocation) string {
	var indexes []int32
	for _, c := range containers {
		for _, d := range c.Devices {
			if !slices.Contains(indexes, d.Index) {
				indexes = append(indexes, d.Index)
			}
		}
	}
	if len(indexes) == 0 {
		return fmt.Sprintf("evicting %s on node %s for the pod", namePods(victims), node)
	}
	slices.Sort(indexes)
	words := make([]string, len(indexes))
	for i, index := range indexes {
		words[i] = strconv.Itoa(int(index))
	}
	gpus := "GPU " + strings.Join(words, ", ")
	if len(indexes) > 1 {
		gpus = "GPUs " + strings.Join(words, ", ")
	}
	return fmt.Sprintf("evicting %s on node %s frees %s for the pod", namePods(victims), node, gpus)
}

// DescribeFutileEviction words why evicting victims on a node makes no
// room for the pod, such as "evicting ns/a on node n would not make room:
// without them the node had 0/2 GPUs that fit (2 not enough memory)"; why
// is Failure.Of("without them the node"), or why the node takes no GPU
// pods.
func DescribeFutileEviction(node string, victims []string, why string) string {
	return fmt.Sprintf("evicting %s on node %s would not make room: %s", namePods(victims), node, why)
}

// namePods words pods in order of name, naming the first few and counting
// the rest, such as "ns/a, ns/b and 3 more pods".
func namePods(pods []string) string {
	pods = slices.Sorted(slices.Values(pods))
	if len(pods) <= maxNamed {
		return strings.Join(pods, ", ")
	}
	return fmt.Sprintf("%s and %d more pods", strings.Join(pods[:maxNamed], ", "), len(pods)-maxNamed)
}
