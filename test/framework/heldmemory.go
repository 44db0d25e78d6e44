package framework

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// HeldMiB returns the GPU memory that tessera-scheduler's view holds on
// the node, read from the state metrics its Tessera plugin serves at
// metricsAddress (Process.MetricsAddress): what its pods are allocated and
// what is reserved for pods not yet bound.
func HeldMiB(ctx context.Context, metricsAddress, node string) (int64, error) {
	status, body := HTTPGet(ctx, "http://"+metricsAddress+"/metrics/state")
	if status != http.StatusOK {
		return 0, fmt.Errorf("reading tessera-scheduler's state metrics: status %d: %s", status, body)
	}
	var bytes float64
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, "tessera_gpu_memory_allocated_bytes{") || !strings.Contains(line, `node="`+node+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %q: %w", line, err)
		}
		bytes += v
	}
	return int64(bytes) >> 20, nil
}
