package options

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
	"github.com/tessera-gpu/tessera/scheduler/view"
)

// Config is the extender's configuration, as read from the --config file
// and overridden by flags.
type Config struct {
	// ListenAddress is the host:port the extender's verbs are served on.
	// It is loopback by default because the extender runs beside
	// kube-scheduler, and on loopback nothing authenticates the caller:
	// /bind binds any pod to any node. Any other address is refused unless
	// TLSCertFile, TLSKeyFile and ClientCAFile are set.
	ListenAddress string `json:"listenAddress"`
	// TLSCertFile and TLSKeyFile, when set, make ListenAddress serve HTTPS
	// with this certificate (read at start). kube-scheduler's extender
	// configuration then names the authority in tlsConfig.caFile.
	TLSCertFile string `json:"tlsCertFile"`
	TLSKeyFile  string `json:"tlsKeyFile"`
	// ClientCAFile, with TLS, makes ListenAddress require a client
	// certificate signed by one of these authorities, such as the one
	// kube-scheduler presents through its extender tlsConfig (certFile,
	// keyFile).
	ClientCAFile string `json:"clientCAFile"`
	// MetricsAddress, when set, is a second host:port that serves only
	// /metrics, /metrics/state, /healthz and /readyz, never the extender's
	// verbs or profiles. Loopback by default; the Helm chart sets the
	// pod's address, so that Prometheus and the kubelet's probes reach it.
	// Empty turns it off. In the plugin's arguments it is the plugin's only
	// listener, off unless set.
	MetricsAddress string `json:"metricsAddress"`
	// ResourceNames are the extended resources pods ask for GPU slices with.
	ResourceNames gpurequest.ResourceNames `json:"resourceNames"`
	// SchedulerName is the scheduler profile whose pods the extender
	// watches; GPU allocations exist only for pods of that profile.
	SchedulerName string `json:"schedulerName"`
	// DefaultNodePolicy picks the node for pods without a node-policy annotation.
	DefaultNodePolicy gpurequest.Policy `json:"defaultNodePolicy"`
	// DefaultGPUPolicy picks the GPUs for pods without a gpu-policy annotation.
	DefaultGPUPolicy gpurequest.Policy `json:"defaultGPUPolicy"`
	// HeartbeatMaxAge is how old a node's Lease, which its device plugin
	// renews, may be before the node takes no new pods; its GPUNode's
	// Ready condition is then set to Unknown.
	HeartbeatMaxAge metav1.Duration `json:"heartbeatMaxAge"`
	// LeaseNamespace holds the nodes' Leases, each named like its node;
	// the device plugins must renew them there.
	LeaseNamespace string `json:"leaseNamespace"`
	// BindWaitTimeout is how long a bind waits for its node's turn while
	// no turn begins there: a bind behind a queue that moves waits its
	// turn, one behind a node whose device plugin stopped serving gives
	// up. The extender's binds wait at most this long in all, since
	// kube-scheduler gives up on them after its httpTimeout: it must stay
	// below that.
	BindWaitTimeout metav1.Duration `json:"bindWaitTimeout"`
	// HAMiCoreMissing is what happens to a pod asking for GPU slices on a
	// node whose device plugin reports the HAMi-core library missing:
	// Refuse keeps it off the node, Warn places it with a warning event.
	HAMiCoreMissing view.HAMiCorePolicy `json:"hamiCoreMissing"`
	// InFlightTTL is how long an allocation that the device plugin has not
	// yet served blocks the next bind to its node.
	InFlightTTL metav1.Duration `json:"inFlightTTL"`
	// OrphanSweepInterval is how often allocations whose pod is gone are
	// looked for and deleted.
	OrphanSweepInterval metav1.Duration `json:"orphanSweepInterval"`
	// ClientQPS and ClientBurst limit the extender's requests to the API server.
	ClientQPS   float32 `json:"clientQPS"`
	ClientBurst int32   `json:"clientBurst"`
	// EnableProfiling serves Go's profiles under /debug/pprof/ on
	// ListenAddress only, which is loopback or behind a client
	// certificate, never on MetricsAddress. Off by default: a profile
	// shows the process's memory and costs CPU while it runs.
	EnableProfiling bool `json:"enableProfiling"`
	// AllocationMetrics adds a series per container and GPU it holds to
	// /metrics/state. Off by default: at 40,000 pods they are most of a
	// 50 MB scrape, and kube-state-metrics already exports each pod's
	// limits.
	AllocationMetrics bool `json:"allocationMetrics"`
	// GangFit serves Kueue's gang-fit AdmissionCheck (controllerName
	// gpu.tessera.dev/gang-fit): a Workload is let in only when all its
	// pods fit the GPUs as they are, and that room is held for them.
	GangFit GangFit `json:"gangFit"`
	// FitGate has the extender lift the scheduling gate
	// gpu.tessera.dev/fit, which Tessera's webhook puts on GPU pods when
	// the fit gate is on, only once some live node could hold the pod's
	// GPUs and the pods ahead of it leave it room (scheduler/gatelift).
	FitGate FitGate `json:"fitGate"`
}

// FitGate configures the extender's fit gate.
type FitGate struct {
	// Enabled lifts the gate. Off by default: the webhook must put the
	// gate on, or nothing is held, and a gated pod waits until a process
	// with the fit gate on lifts it.
	Enabled bool `json:"enabled"`
	// LeaseNamespace and LeaseName name the Lease that elects the one
	// extender process that decides which pods to release, so that two
	// running side by side in a rollout never release two pods for one
	// pod's room.
	LeaseNamespace string `json:"leaseNamespace"`
	LeaseName      string `json:"leaseName"`
}

// Defaults.
const (
	DefaultListenAddress       = "127.0.0.1:8888"
	DefaultMetricsAddress      = "127.0.0.1:9403"
	DefaultSchedulerName       = "tessera-scheduler"
	DefaultHeartbeatMaxAge     = 2 * time.Minute
	DefaultBindWaitTimeout     = 25 * time.Second
	DefaultInFlightTTL         = 60 * time.Second
	DefaultOrphanSweepInterval = time.Minute
	DefaultClientQPS           = 500
	DefaultClientBurst         = 1000
	DefaultGangFitHoldTimeout  = 5 * time.Minute
	DefaultGangFitRetryAfter   = 15 * time.Second
	DefaultGangFitLeaseName    = "tessera-gang-fit"
	DefaultLeaseNamespace      = "kube-system"
	DefaultFitGateLeaseName    = "tessera-fit-gate"
)

// GangFit configures the gang-fit AdmissionCheck (scheduler/gangfit).
type GangFit struct {
	// Enabled serves the check. Off by default: it watches Kueue's
	// Workloads and AdmissionChecks, which a cluster without Kueue lacks.
	Enabled bool `json:"enabled"`
	// HoldTimeout is how long the room of an admitted Workload is held for
	// pods not yet placed; after it, they compete for GPUs as any pod.
	HoldTimeout metav1.Duration `json:"holdTimeout"`
	// RetryAfter is how long Kueue waits before it reserves quota again for
	// a Workload whose pods did not fit: the check asks Kueue to retry
	// (releasing the quota for the Workloads behind it) instead of holding
	// the quota while the GPUs stay fragmented.
	RetryAfter metav1.Duration `json:"retryAfter"`
	// LeaseNamespace and LeaseName name the Lease that elects the one
	// scheduler process that decides the checks. Every process holds the
	// room of the Workloads already admitted, so two running side by side
	// in a rollout never promise the same room twice.
	LeaseNamespace string `json:"leaseNamespace"`
	LeaseName      string `json:"leaseName"`
}

// NewConfig returns the configuration with every default filled in.
func NewConfig() *Config {
	return &Config{
		ListenAddress:       DefaultListenAddress,
		MetricsAddress:      DefaultMetricsAddress,
		ResourceNames:       gpurequest.DefaultResourceNames(),
		SchedulerName:       DefaultSchedulerName,
		DefaultNodePolicy:   gpurequest.Binpack,
		DefaultGPUPolicy:    gpurequest.Spread,
		HeartbeatMaxAge:     metav1.Duration{Duration: DefaultHeartbeatMaxAge},
		LeaseNamespace:      gpuv1alpha1.DefaultNodeLeaseNamespace,
		BindWaitTimeout:     metav1.Duration{Duration: DefaultBindWaitTimeout},
		HAMiCoreMissing:     view.HAMiCoreRefuse,
		InFlightTTL:         metav1.Duration{Duration: DefaultInFlightTTL},
		OrphanSweepInterval: metav1.Duration{Duration: DefaultOrphanSweepInterval},
		ClientQPS:           DefaultClientQPS,
		ClientBurst:         DefaultClientBurst,
		GangFit: GangFit{
			HoldTimeout:    metav1.Duration{Duration: DefaultGangFitHoldTimeout},
			RetryAfter:     metav1.Duration{Duration: DefaultGangFitRetryAfter},
			LeaseNamespace: DefaultLeaseNamespace,
			LeaseName:      DefaultGangFitLeaseName,
		},
		FitGate: FitGate{
			LeaseNamespace: DefaultLeaseNamespace,
			LeaseName:      DefaultFitGateLeaseName,
		},
	}
}
