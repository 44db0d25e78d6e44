package commit

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
)

// Committer writes pods' GPUAllocations and binds the pods.
type Committer struct {
	// Gate keeps one allocation per node in flight.
	Gate *inflight.Gate
	// Clock times the wait for a node's turn.
	Clock clock.PassiveClock
	// Kube binds pods and reads them back after a failed binding.
	Kube kubernetes.Interface
	// Tessera writes GPUAllocations.
	Tessera versioned.Interface
	// FieldManager names the front end in the managed fields of its writes.
	FieldManager string
	// BindWaitTimeout is how long a bind waits for its node's turn while
	// no turn begins there: binds behind a long queue wait their turn, and
	// those behind a node whose turns stopped give up.
	BindWaitTimeout time.Duration
	// BindWaitLimit, when set, bounds a bind's whole wait for its node's
	// turn, however the node's turns move: the extender answers each bind
	// within kube-scheduler's httpTimeout.
	BindWaitLimit time.Duration
	// QueueWait observes each wait for a node's turn, in seconds; nil
	// observes none.
	QueueWait prometheus.Observer
	// Waiting counts the binds waiting now for their node's turn; nil
	// counts none.
	Waiting prometheus.Gauge
}

// detach returns a context for undoing work after ctx may have ended.
func detach(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}
