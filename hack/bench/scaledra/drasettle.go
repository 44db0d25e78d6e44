package scaledra

import (
	"context"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// Settling the DRA node daemons: their steady state is measured once they
// only renew their Leases, as a running fleet's do.
const (
	// draSettleProbe is each look at what the daemons sent.
	draSettleProbe = 10 * time.Second
	// draSettleMax is how long they may take to settle; the windows are
	// measured then even if they have not, and the log says so.
	draSettleMax = 10 * time.Minute
)

// nodeUIDs returns every node's UID by name, which each daemon's
// ResourceSlice controller is given as its owner's, as a kubelet plugin
// knows its node's.
func nodeUIDs(ctx context.Context, env *harness.ClusterEnv) (map[string]types.UID, error) {
	nodes, err := env.ControlPlane.Kube.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, err
	}
	uids := make(map[string]types.UID, len(nodes.Items))
	for _, n := range nodes.Items {
		uids[n.Name] = n.UID
	}
	return uids, nil
}

// settle waits at least least, then until a probe of the daemons' requests
// finds nothing but Lease reads and renewals, up to draSettleMax. It
// returns how long that took and whether they settled.
func settle(ctx context.Context, requests *meter.RequestTally, least time.Duration) (time.Duration, bool) {
	start := time.Now()
	logger := klog.FromContext(ctx)
	select {
	case <-ctx.Done():
		return time.Since(start), false
	case <-time.After(least):
	}
	for time.Since(start) < draSettleMax {
		before := requests.Count()
		select {
		case <-ctx.Done():
			return time.Since(start), false
		case <-time.After(draSettleProbe):
		}
		sent := requests.Count().Since(before)
		if onlyLeases(sent) {
			logger.Info("The DRA node daemons settled: they only renew their Leases", "after", time.Since(start).Round(time.Second), "probe", sent.String())
			return time.Since(start), true
		}
		logger.Info("The DRA node daemons have not settled", "after", time.Since(start).Round(time.Second), "probe", sent.String())
	}
	return time.Since(start), false
}

// onlyLeases reports whether every request counted is a Lease's.
func onlyLeases(c meter.RequestCount) bool {
	for kind, n := range c.ByKind {
		if n > 0 && !strings.HasSuffix(kind, " leases") {
			return false
		}
	}
	return true
}
