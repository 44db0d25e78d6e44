package admission

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// benchCluster is a cluster of 500 nodes with 8 GPUs each.
func benchCluster() []runtime.Object {
	objs := make([]runtime.Object, 0, 501)
	for i := range 500 {
		objs = append(objs, gpuNode(fmt.Sprintf("node-%d", i), 100, 81920, 81920, 81920, 81920, 81920, 81920, 81920, 81920))
	}
	return append(objs, namespace(testNamespace, nil))
}

// benchPod is a training pod: a GPU sidecar and two GPU containers.
func benchPod() *corev1.Pod {
	p := pod(limited("trainer", "nvidia.com/gpumem", "20000", "nvidia.com/gpucores", "50", "cpu", "8"),
		limited("evaluator", "nvidia.com/gpumem-percentage", "25"))
	p.Spec.InitContainers = []corev1.Container{limited("warmup", "nvidia.com/gpu", "1")}
	p.Annotations = map[string]string{"tessera.dev/gpu-type": "A100,H100", "tessera.dev/node-policy": "spread"}
	return p
}

func BenchmarkMutate(b *testing.B) {
	a := newAdmitter(b, DefaultConfig(), benchCluster()...)
	req := createRequest(b, benchPod())
	ctx := klog.NewContext(context.Background(), logr.Discard())
	b.ReportAllocs()
	for b.Loop() {
		if resp := a.Mutate(ctx, req); len(resp.Patch) == 0 {
			b.Fatal("no patch")
		}
	}
}

// BenchmarkMutateDRA measures the same pod turned into claims: the claim
// specs, their CEL selectors, the percentage's sizes read from every
// GPUNode, the templates' hashes and the lookup of each template (absent
// from the informer, so created in a fake clientset, and the API server's
// round trip is not in it).
func BenchmarkMutateDRA(b *testing.B) {
	cfg := DefaultConfig()
	cfg.Mode = ModeDRA
	objs := benchCluster()
	for _, o := range objs {
		if n, ok := o.(*gpuv1alpha1.GPUNode); ok {
			n.Status.KubeletAPI = gpuv1alpha1.KubeletAPIDRA
		}
	}
	a := newAdmitter(b, cfg, objs...)
	req := createRequest(b, benchPod())
	ctx := klog.NewContext(context.Background(), logr.Discard())
	b.ReportAllocs()
	for b.Loop() {
		if resp := a.Mutate(ctx, req); len(resp.Patch) == 0 {
			b.Fatal("no patch", resp.Result)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	a := newAdmitter(b, DefaultConfig(), benchCluster()...)
	req := createRequest(b, benchPod())
	ctx := klog.NewContext(context.Background(), logr.Discard())
	b.ReportAllocs()
	for b.Loop() {
		if resp := a.Validate(ctx, req); !resp.Allowed {
			b.Fatal(resp.Result.Message)
		}
	}
}

// BenchmarkHandler measures one review over HTTP without TLS: body read,
// decoding, both webhooks' work and the encoded answer.
func BenchmarkHandler(b *testing.B) {
	a := newAdmitter(b, DefaultConfig(), benchCluster()...)
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		b.Fatal(err)
	}
	for name, review := range map[string]ReviewFunc{WebhookMutate: a.Mutate, WebhookValidate: a.Validate} {
		b.Run(name, func(b *testing.B) {
			h := NewHandler(name, review, DefaultMaxRequestBytes, m, clock.RealClock{})
			body := reviewBody(b, createRequest(b, benchPod()))
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if w := serve(h, http.MethodPost, "application/json", body); w.Code != http.StatusOK {
					b.Fatal(w.Code)
				}
			}
		})
	}
}
