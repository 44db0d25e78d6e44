package extender

import (
	"errors"
	"runtime"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/commit"
	"github.com/tessera-gpu/tessera/scheduler/inflight"
	"github.com/tessera-gpu/tessera/scheduler/metrics"
	"github.com/tessera-gpu/tessera/scheduler/placement"
	"github.com/tessera-gpu/tessera/scheduler/podrequest"
	"github.com/tessera-gpu/tessera/scheduler/preemption"
	"github.com/tessera-gpu/tessera/scheduler/quota"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// FieldManager names the extender in the managed fields of what it writes.
const FieldManager = "tessera-scheduler-extender"

// Config is what an Extender needs.
type Config struct {
	// View is the picture of every GPU that filter and prioritize read
	// and bind reserves in.
	View *view.View
	// Gate keeps one allocation per node in flight.
	Gate *inflight.Gate
	// Clock tells the time for heartbeats and latencies.
	Clock clock.PassiveClock
	// Kube binds pods, reads pods the cache lacks and records events.
	Kube kubernetes.Interface
	// Tessera writes GPUAllocations.
	Tessera versioned.Interface
	// Pods reads the pods to bind from the informer cache.
	Pods corelisters.PodLister
	// Recorder records events on pods; nil records none.
	Recorder events.EventRecorder
	// Metrics counts and times requests; nil records none.
	Metrics *metrics.Requests
	// Requeue learns which pods no node could take, so that they are
	// retried when GPUs are freed; nil for none.
	Requeue Requeue
	// QuotaRequeue learns which of them their namespace's GPU quota
	// turned away, so that they are retried when the namespace frees GPUs
	// or its quota is raised; nil for none.
	QuotaRequeue QuotaRequeue
	// FitGate hears of the scheduling cycles of the pods it released,
	// and tells filter the room it released them for; nil when the fit
	// gate is off.
	FitGate FitGate

	// ResourceNames are the resources pods ask for GPU slices with.
	ResourceNames gpurequest.ResourceNames
	// DefaultNodePolicy and DefaultGPUPolicy apply to pods without a
	// policy annotation.
	DefaultNodePolicy gpurequest.Policy
	DefaultGPUPolicy  gpurequest.Policy
	// HeartbeatMaxAge is the oldest renewal of its Lease a node may have
	// to take new pods.
	HeartbeatMaxAge time.Duration
	// BindWaitTimeout bounds a bind's wait for its node's turn, which must
	// end within kube-scheduler's httpTimeout.
	BindWaitTimeout time.Duration
	// HAMiCoreMissing is what happens to pods asking for GPU slices on a
	// node without the HAMi-core library; empty means HAMiCoreRefuse.
	HAMiCoreMissing view.HAMiCorePolicy
	// Quotas tell the namespaces' GPU limits; nil enforces none.
	Quotas quota.Source

	// Ready reports whether the view holds everything the API does; until
	// it does, the extender refuses to decide.
	Ready func() bool
	// Workers is how many goroutines at most decide the nodes of one filter
	// or prioritize call, each a run of at least view.MinNodesPerWorker of
	// them; 0 means GOMAXPROCS, the CPUs the process may use.
	Workers int
}

// Requeue remembers the pods turned away, until they are bound.
type Requeue interface {
	// Rejected records a pod no node could take; serves tells whether a
	// node could take it now.
	Rejected(pod *corev1.Pod, serves func(ft *placement.Fitter, node string) bool)
	Forget(uid types.UID)
	// Freed says GPUs may have become free on the node: the view holds
	// the node as it is now.
	Freed(node string)
}

// FitGate is the extender's fit gate (scheduler/gatelift), which
// releases gated pods for the room they can take and must hear when their
// cycles start and end.
type FitGate interface {
	// Started says a cycle of the pod, asking for req, reached the filter.
	Started(pod *corev1.Pod, req *placement.Request)
	// Ended says the pod's cycle bound it to node, or, with node "",
	// placed it nowhere.
	Ended(uid types.UID, node string)
	// Freed says GPUs may have become free on the node.
	Freed(node string)
	// Claimed returns what the pods other than except, of priority at
	// least priority, released for room on the node are to take there
	// (waiters.Queue.Claimed).
	Claimed(node string, except types.UID, priority int32) []placement.Hold
}

// QuotaRequeue remembers the pods a namespace's GPU quota turned away,
// until they are bound.
type QuotaRequeue interface {
	// OverQuota records that the pod's namespace's GPU quota turned it
	// away on some node, by what the namespace held at since; admits
	// tells whether the quota has room now for what the pod asked beside
	// taken, and what it asked.
	OverQuota(pod *corev1.Pod, since time.Time, admits func(taken placement.Use) (placement.Use, bool))
	// QuotaFreed says the namespace's GPU quota may have room: a bind
	// gave back what it reserved.
	QuotaFreed(namespace string)
}

// Extender answers filter, prioritize and bind.
type Extender struct {
	Config

	// calls is the memory filter and prioritize calls reuse.
	calls calls
	// notifier tells pods what preemption would do for them.
	notifier *preemption.Notifier
}

// New returns an extender.
func New(cfg Config) *Extender {
	return &Extender{Config: cfg, notifier: preemption.NewNotifier(cfg.Recorder, cfg.Clock, preemption.DefaultRepeat)}
}

// committer writes allocations and binds pods with the extender's clients.
func (e *Extender) committer() *commit.Committer {
	c := &commit.Committer{
		Gate: e.Gate, Clock: e.Clock, Kube: e.Kube, Tessera: e.Tessera,
		FieldManager: FieldManager, BindWaitTimeout: e.BindWaitTimeout,
		// kube-scheduler gives up on a bind after its httpTimeout.
		BindWaitLimit: e.BindWaitTimeout,
	}
	if e.Metrics != nil {
		c.QueueWait, c.Waiting = e.Metrics.BindQueueWait, e.Metrics.BindsWaiting
	}
	return c
}

// workers is how many goroutines may decide the nodes of one call.
func (e *Extender) workers() int {
	if e.Workers > 0 {
		return e.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// resize returns s with length n, reusing its memory when it can; what it
// holds is to be overwritten.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

// request reads a pod's GPU request. The error names the pod's invalid fields.
func (e *Extender) request(pod *corev1.Pod) (podrequest.Request, error) {
	p := podrequest.Parser{ResourceNames: e.ResourceNames, DefaultNodePolicy: e.DefaultNodePolicy, DefaultGPUPolicy: e.DefaultGPUPolicy}
	return p.Parse(pod)
}

// rules are what keep a node from taking a pod whatever its GPUs' usage:
// such a node is unresolvable, since evicting pods would not help.
func (e *Extender) rules() view.Rules {
	return view.Rules{HeartbeatMaxAge: e.HeartbeatMaxAge, HAMiCoreMissing: e.HAMiCoreMissing, Quotas: e.Quotas, CoresResource: e.ResourceNames.Cores}
}

// errNotReady is the answer while the view is still being built.
var errNotReady = errors.New("extender is not ready: its view of GPUs and allocations is not yet synced with the API")

func (e *Extender) ready() bool { return e.Ready == nil || e.Ready() }
