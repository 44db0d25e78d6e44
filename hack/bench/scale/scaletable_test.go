package scale

import (
	"strings"
	"testing"
	"time"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

func TestScaleResultMarkdown(t *testing.T) {
	r := &ScaleResult{
		Nodes: 5000, GPUsPerNode: 8, Pods: 40000, LoadAtStart: "0.50 0.40 0.30", Load: "2.00 1.00 0.50", QuietAfter: 14 * time.Second, Quiet: true,
		SyncTime: 12 * time.Second, RSSAfterSync: 300 << 20, PeakAfterSync: 310 << 20, PeakAfterProbes: 320 << 20,
		PeakAfterScrape: 400 << 20, HeapInuse: 200 << 20, MetricsBytes: 50 << 20, ScrapeCPU: 900 * time.Millisecond,
		Filter:       meter.Quantiles{P50: 3 * time.Millisecond, P99: 4500 * time.Microsecond, Count: 300},
		FilterServer: meter.Quantiles{P50: 2 * time.Millisecond, P99: 4 * time.Millisecond, Count: 300},
		Prioritize:   meter.Quantiles{P50: time.Millisecond, P99: 2 * time.Millisecond, Count: 300},
		FilterCPU:    2500 * time.Microsecond, PrioritizeCPU: 800 * time.Microsecond, Feasible: 3500,
		APIRequests: meter.RequestCount{Total: 3, ByKind: map[string]int{"watch pods": 1, "watch gpunodes": 1, "watch gpuallocations": 1}},
	}
	var b strings.Builder
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"5000 nodes × 8 GPUs, 40000 pods placed (load average 0.50 0.40 0.30 before the bench's writes, 2.00 1.00 0.50 when the extender started; probes began 14s after its memory was read, once the control plane was idle)",
		"| measure | value | target |",
		"| peak resident memory (VmHWM) after sync | 310 MiB | < 400 MiB |",
		"| filter p50 / p99, 5000 nodes, round trip | 3.0 ms / 4.5 ms | < 5 ms |",
		"| extender CPU time per filter call | 2.5 ms |  |",
		"| prioritize p50 / p99, 3500 feasible nodes, round trip | 1.0 ms / 2.0 ms |  |",
		"| peak resident memory after one /metrics scrape (50.0 MiB of text) | 400 MiB |  |",
		"| extender CPU time for the scrape | 900 ms |  |",
		"extender API requests by kind: watch gpuallocations: 1, watch gpunodes: 1, watch pods: 1",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scale table lacks %q:\n%s", want, out)
		}
	}
}

func TestScaleResultHeartbeatRows(t *testing.T) {
	r := &ScaleResult{Nodes: 5000, GPUsPerNode: 8, Pods: 1, Heartbeats: &harness.Heartbeats{
		Period: 15 * time.Second, Window: time.Minute, Writes: 20000,
		APIServer: 30 * time.Second, Etcd: 6 * time.Second, Extender: 3 * time.Second, Load: "1.00 1.00 1.00",
	}}
	var b strings.Builder
	if err := r.WriteMarkdown(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"| heartbeat requests per second, 5000 nodes every 15s | 333.3 |  |",
		"| kube-apiserver CPU per second of steady state | 0.500 CPU |  |",
		"| etcd CPU per second of steady state | 0.100 CPU |  |",
		"| extender CPU per second of steady state | 0.050 CPU |  |",
		"steady state measured for 1m0s, one period and a half after the heartbeats began; load average 1.00 1.00 1.00",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scale table lacks %q:\n%s", want, out)
		}
	}
}
