package options

import (
	"fmt"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// Options are everything the extender's command line sets.
type Options struct {
	// ConfigFile is the YAML configuration file; flags override its values.
	ConfigFile string
	// Kubeconfig is the kubeconfig file; empty means in-cluster configuration.
	Kubeconfig string
	// Config is the extender's configuration.
	Config *Config
	// Logs configures logging (-v, --logging-format).
	Logs *logsapi.LoggingConfiguration

	// configFlags are the flags that write into Config, re-applied over the file.
	configFlags []string
}

// NewOptions returns options holding the defaults.
func NewOptions() *Options {
	return &Options{Config: NewConfig(), Logs: logsapi.NewLoggingConfiguration()}
}

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "YAML configuration file; flags given on the command line override its values.")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "Kubeconfig file; empty for the in-cluster configuration.")

	c := o.Config
	before := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	fs.StringVar(&c.ListenAddress, "listen-address", c.ListenAddress, "host:port for the extender's verbs, health and metrics. /bind binds any pod to any node and takes no credentials on loopback; any other address needs --tls-cert-file, --tls-private-key-file and --client-ca-file.")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", c.TLSCertFile, "PEM certificate (chain) that --listen-address serves HTTPS with; read at start.")
	fs.StringVar(&c.TLSKeyFile, "tls-private-key-file", c.TLSKeyFile, "PEM private key of --tls-cert-file.")
	fs.StringVar(&c.ClientCAFile, "client-ca-file", c.ClientCAFile, "PEM authorities whose client certificates --listen-address requires (kube-scheduler's extender tlsConfig certFile); needs --tls-cert-file.")
	fs.StringVar(&c.MetricsAddress, "metrics-address", c.MetricsAddress, "host:port also serving /metrics, /healthz and /readyz, never the extender's verbs or profiles; empty turns it off. Loopback by default; in a pod, set the pod's address (such as :9403) for Prometheus and the kubelet's probes.")
	fs.StringVar(&c.SchedulerName, "scheduler-name", c.SchedulerName, "Scheduler profile whose pods the extender places.")
	fs.StringVar((*string)(&c.ResourceNames.Count), "resource-count", string(c.ResourceNames.Count), "Resource name for the number of GPUs.")
	fs.StringVar((*string)(&c.ResourceNames.Memory), "resource-memory", string(c.ResourceNames.Memory), "Resource name for GPU memory in MiB.")
	fs.StringVar((*string)(&c.ResourceNames.MemoryPercentage), "resource-memory-percentage", string(c.ResourceNames.MemoryPercentage), "Resource name for GPU memory as a percentage.")
	fs.StringVar((*string)(&c.ResourceNames.Cores), "resource-cores", string(c.ResourceNames.Cores), "Resource name for the percentage of a GPU's compute.")
	fs.StringVar((*string)(&c.DefaultNodePolicy), "default-node-policy", string(c.DefaultNodePolicy), "Node policy for pods without an annotation: binpack or spread.")
	fs.StringVar((*string)(&c.DefaultGPUPolicy), "default-gpu-policy", string(c.DefaultGPUPolicy), "GPU policy for pods without an annotation: binpack or spread.")
	fs.DurationVar(&c.HeartbeatMaxAge.Duration, "heartbeat-max-age", c.HeartbeatMaxAge.Duration, "A node whose Lease was last renewed longer ago takes no new pods, and its GPUNode's Ready condition becomes Unknown.")
	fs.StringVar(&c.LeaseNamespace, "lease-namespace", c.LeaseNamespace, "Namespace of the nodes' Leases, which the device plugins renew.")
	fs.StringVar((*string)(&c.HAMiCoreMissing), "hami-core-missing", string(c.HAMiCoreMissing), "Pods asking for GPU slices on a node whose HAMi-core library is missing: Refuse keeps them off it, Warn places them with a warning event.")
	fs.DurationVar(&c.BindWaitTimeout.Duration, "bind-wait-timeout", c.BindWaitTimeout.Duration, "How long a bind waits for its node's turn while no turn begins there; the extender's binds wait at most this long in all, so keep it below kube-scheduler's extender httpTimeout.")
	fs.DurationVar(&c.InFlightTTL.Duration, "in-flight-ttl", c.InFlightTTL.Duration, "How long an allocation not yet served by the device plugin blocks the next bind to its node.")
	fs.DurationVar(&c.OrphanSweepInterval.Duration, "orphan-sweep-interval", c.OrphanSweepInterval.Duration, "How often allocations whose pod is gone are deleted.")
	fs.Float32Var(&c.ClientQPS, "kube-api-qps", c.ClientQPS, "Queries per second to the API server.")
	fs.Int32Var(&c.ClientBurst, "kube-api-burst", c.ClientBurst, "Burst of queries to the API server.")
	fs.BoolVar(&c.EnableProfiling, "profiling", c.EnableProfiling, "Serve Go's CPU, heap and goroutine profiles under /debug/pprof/ on --listen-address (loopback, or behind a client certificate), never on --metrics-address.")
	fs.BoolVar(&c.GangFit.Enabled, "gang-fit", c.GangFit.Enabled, "Serve Kueue's gang-fit AdmissionCheck (controllerName gpu.tessera.dev/gang-fit): admit a Workload only when all its pods fit the GPUs, and hold that room.")
	fs.DurationVar(&c.GangFit.HoldTimeout.Duration, "gang-fit-hold-timeout", c.GangFit.HoldTimeout.Duration, "How long an admitted Workload's room is held for its pods not yet placed.")
	fs.DurationVar(&c.GangFit.RetryAfter.Duration, "gang-fit-retry-after", c.GangFit.RetryAfter.Duration, "How long Kueue waits before it tries again a Workload whose pods did not fit.")
	fs.StringVar(&c.GangFit.LeaseNamespace, "gang-fit-lease-namespace", c.GangFit.LeaseNamespace, "Namespace of the Lease that elects the one scheduler process deciding the gang-fit checks.")
	fs.StringVar(&c.GangFit.LeaseName, "gang-fit-lease-name", c.GangFit.LeaseName, "Name of the Lease that elects the one scheduler process deciding the gang-fit checks.")
	fs.BoolVar(&c.FitGate.Enabled, "fit-gate", c.FitGate.Enabled, "Lift the scheduling gate "+gpuv1alpha1.FitSchedulingGate+", which the webhook puts on GPU pods with --fit-gate-schedulers, once some live node could hold the pod's GPUs and the pods ahead of it leave it room.")
	fs.StringVar(&c.FitGate.LeaseNamespace, "fit-gate-lease-namespace", c.FitGate.LeaseNamespace, "Namespace of the Lease that elects the one extender process lifting fit gates.")
	fs.StringVar(&c.FitGate.LeaseName, "fit-gate-lease-name", c.FitGate.LeaseName, "Name of the Lease that elects the one extender process lifting fit gates.")
	fs.BoolVar(&c.AllocationMetrics, "allocation-metrics", c.AllocationMetrics, "Add a series per container and GPU it holds (tessera_allocation_*) to /metrics/state; many at thousands of pods.")
	fs.VisitAll(func(f *pflag.Flag) {
		if !before[f.Name] {
			o.configFlags = append(o.configFlags, f.Name)
		}
	})

	logsapi.AddFlags(o.Logs, fs)
}

// Complete loads the configuration file, if any, re-applies the flags that
// were given on the command line over it, and validates the result. Call it
// after fs has been parsed.
func (o *Options) Complete(fs *pflag.FlagSet) error {
	if o.ConfigFile == "" {
		return o.Config.Validate()
	}
	given := map[string]string{}
	for _, name := range o.configFlags {
		if f := fs.Lookup(name); f != nil && f.Changed {
			given[name] = f.Value.String()
		}
	}
	loaded, err := LoadFile(o.ConfigFile)
	if err != nil {
		return err
	}
	// The flags point into *o.Config, so the file is copied in place.
	*o.Config = *loaded
	for name, value := range given {
		if err := fs.Set(name, value); err != nil {
			return fmt.Errorf("re-applying --%s over the configuration file: %w", name, err)
		}
	}
	return o.Config.Validate()
}
