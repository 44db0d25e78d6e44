package dra

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestGPUNodeAndMetricsShowDRAAllocations checks that people and programs
// see what kube-scheduler allocated on a DRA node the way they see the
// extender's allocations: kubectl get gpunodes shows the free memory, and
// the node daemon's /metrics the per-GPU capacity and allocated memory,
// cores and shares, all read from the ResourceClaims, and both follow the
// claims as pods come and go.
func TestGPUNodeAndMetricsShowDRAAllocations(t *testing.T) {
	c := startCluster(t, &simNode{name: "solo", gpus: oneH100})
	c.claimTemplate("mem30", resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		gpuRequest("gpu", 1, map[resourceapi.QualifiedName]string{gpuv1alpha1.DRACapacityMemory: "30Gi", gpuv1alpha1.DRACapacityCores: "40"}),
	}})
	c.waitShown(81920, gpuState{memory: 0, cores: 0, shares: 0})

	c.waitRunningCreated(claimPod("p1", "solo", "mem30", map[string]string{"cuda": ""}))
	c.waitRunningCreated(claimPod("p2", "solo", "mem30", map[string]string{"cuda": ""}))
	c.waitShown(81920-2*30720, gpuState{memory: 2 * 30 << 30, cores: 80, shares: 2})

	gn, err := c.cp.Tessera.GpuV1alpha1().GPUNodes().Get(c.ctx, "solo", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if gn.Status.KubeletAPI != gpuv1alpha1.KubeletAPIDRA {
		t.Errorf("the GPUNode says kubeletAPI %q, want DRA", gn.Status.KubeletAPI)
	}

	if err := c.cp.Kube.CoreV1().Pods(metav1.NamespaceDefault).Delete(c.ctx, "p1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	c.waitShown(81920-30720, gpuState{memory: 30 << 30, cores: 40, shares: 1})
}

// gpuState is what the daemon's metrics say is allocated on the GPU.
type gpuState struct{ memory, cores, shares int64 }

// waitShown waits until kubectl get gpunodes shows the free memory and the
// node daemon's metrics the allocated state of the node's one GPU.
func (c *cluster) waitShown(freeMiB int64, want gpuState) {
	c.t.Helper()
	n := c.nodes["solo"]
	addr, err := n.daemon.MetricsAddress(c.ctx)
	if err != nil {
		c.t.Fatal(err)
	}
	framework.WaitFor(c.t, time.Minute, fmt.Sprintf("free memory %d MiB and allocated %+v to show", freeMiB, want), func() (bool, string) {
		table := framework.GetTable(c.ctx, c.t, c.cp.Kube, "/apis/gpu.tessera.dev/v1alpha1/gpunodes")
		free := ""
		for i, col := range table.ColumnDefinitions {
			for _, row := range table.Rows {
				if col.Name == "Free(MiB)" && row.Cells[0] == "solo" {
					free = fmt.Sprint(row.Cells[i])
				}
			}
		}
		got, err := scrape("http://" + addr + "/metrics")
		if err != nil {
			return false, err.Error()
		}
		return free == strconv.FormatInt(freeMiB, 10) && got == want,
			fmt.Sprintf("kubectl shows free %q; metrics %+v", free, got)
	})
}

// scrape reads the allocated state of GPU-solo-0 from the daemon's
// metrics, checking its capacity on the way.
func scrape(url string) (gpuState, error) {
	resp, err := http.Get(url) //nolint:gosec // a loopback test URL
	if err != nil {
		return gpuState{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return gpuState{}, err
	}
	value := func(name string) (int64, error) {
		m := regexp.MustCompile(`(?m)^` + name + `\{index="0",model="NVIDIA H100 80GB HBM3",node="solo",uuid="GPU-solo-0"\} (\S+)$`).FindSubmatch(body)
		if m == nil {
			return 0, fmt.Errorf("no %s of GPU-solo-0 in the metrics", name)
		}
		f, err := strconv.ParseFloat(string(m[1]), 64)
		return int64(f), err
	}
	var s gpuState
	for _, v := range []struct {
		name string
		to   *int64
		want int64
	}{
		{"tessera_gpu_memory_allocated_bytes", &s.memory, -1}, {"tessera_gpu_cores_allocated", &s.cores, -1}, {"tessera_gpu_shares_in_use", &s.shares, -1},
		{"tessera_gpu_memory_capacity_bytes", nil, 80 << 30}, {"tessera_gpu_cores_capacity", nil, 100}, {"tessera_gpu_share_limit", nil, 4},
	} {
		got, err := value(v.name)
		if err != nil {
			return s, err
		}
		if v.to != nil {
			*v.to = got
		} else if got != v.want {
			return s, fmt.Errorf("%s is %d, want %d", v.name, got, v.want)
		}
	}
	return s, nil
}
