package metrics

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// scaleView is the scale bench's cluster: 5,000 nodes of 8 GPUs, one pod
// with one container on each GPU.
func scaleView() *view.View {
	v := view.New()
	hb := metav1.Now()
	for n := range 5000 {
		gn := &gpuv1alpha1.GPUNode{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%05d", n)}}
		for i := range 8 {
			gn.Status.Devices = append(gn.Status.Devices, gpuv1alpha1.GPUDevice{UUID: fmt.Sprintf("GPU-%05d-%d", n, i), Index: int32(i),
				Model: "NVIDIA H100 80GB HBM3", MemoryMiB: 81920, Cores: 100, ShareLimit: 10, Health: gpuv1alpha1.GPUHealthy})
			name := fmt.Sprintf("pod-%05d-%d", n, i)
			v.Place(&gpuv1alpha1.GPUAllocation{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("a-" + name)},
				Spec: gpuv1alpha1.GPUAllocationSpec{PodUID: types.UID(name), NodeName: gn.Name, Containers: []gpuv1alpha1.ContainerAllocation{{
					Name: "main", Kind: gpuv1alpha1.ContainerApp,
					Devices: []gpuv1alpha1.DeviceAllocation{{UUID: gn.Status.Devices[i].UUID, Index: int32(i), MemoryMiB: 20480, Cores: 25}}}}},
			})
		}
		v.SetGPUNode(gn)
		v.SetLease(gn.Name, hb.Time)
	}
	return v
}

// discard is a response writer that keeps nothing, so that the benchmark
// counts only what the handler allocates.
type discard struct{ header http.Header }

func (d *discard) Header() http.Header         { return d.header }
func (d *discard) Write(p []byte) (int, error) { return len(p), nil }
func (d *discard) WriteHeader(int)             {}

// BenchmarkScrape serves /metrics/state at the scale bench's size,
// gzipped as Prometheus asks for it, with and without the per-allocation
// series. B/op is what one scrape allocates; bytes/scrape is the text's
// size before compression.
func BenchmarkScrape(b *testing.B) {
	v := scaleView()
	for _, allocations := range []bool{false, true} {
		b.Run(fmt.Sprintf("allocations=%v", allocations), func(b *testing.B) {
			h := NewState(v, StateOptions{Allocations: allocations}).Handler()
			plain := httptest.NewRecorder()
			h.ServeHTTP(plain, httptest.NewRequest(http.MethodGet, "/metrics/state", nil))
			req := httptest.NewRequest(http.MethodGet, "/metrics/state", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(&discard{header: http.Header{}}, req)
			}
			b.ReportMetric(float64(plain.Body.Len()), "bytes/scrape")
		})
	}
}
