// Package app turns the device plugin's command line into a running
// plugin: flags and the configuration file into Options, Options into
// clients and a plugin.Plugin.
package app

import (
	"fmt"
	"os"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"

	"github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/internal/version"
)

// Options are the daemon's settings.
type Options struct {
	// ConfigFile is a YAML or JSON config.Configuration; flags given on
	// the command line override it.
	ConfigFile string
	// Kubeconfig is a kubeconfig file; empty: the in-cluster configuration.
	Kubeconfig string
	// Config is the plugin's configuration.
	Config config.Configuration
	// Logs is the logging configuration (-v, --logging-format, ...).
	Logs *logsapi.LoggingConfiguration
	// Version is --version: when given, Parse reads nothing else.
	Version *version.Flag
}

// addFlags binds the flags to o.
func (o *Options) addFlags(fs *pflag.FlagSet) {
	c := &o.Config
	fs.StringVar(&o.ConfigFile, "config", o.ConfigFile, "YAML or JSON configuration file; flags override its settings")
	fs.StringVar(&o.Kubeconfig, "kubeconfig", o.Kubeconfig, "kubeconfig file; empty: the in-cluster configuration")
	fs.StringVar(&c.NodeName, "node-name", c.NodeName, "the node the plugin runs on (default: $NODE_NAME)")
	fs.Int32Var(&c.SplitCount, "split-count", c.SplitCount, "how many containers may share one GPU")
	fs.Float64Var(&c.MemoryScaling, "memory-scaling", c.MemoryScaling, "multiplies each GPU's memory; above 1 over-commits")
	fs.Float64Var(&c.CoreScaling, "core-scaling", c.CoreScaling, "multiplies each GPU's 100 cores; above 1 over-commits")
	fs.StringVar(&c.ResourceName, "resource-name", c.ResourceName, "the GPU count resource registered with the kubelet")
	fs.StringVar(&c.LibraryPath, "hami-core-library", c.LibraryPath, "host path of the HAMi-core library mounted into containers; empty: none")
	fs.StringVar(&c.LibraryContainerPath, "hami-core-container-path", c.LibraryContainerPath, "where the HAMi-core library appears in the container")
	fs.StringVar(&c.PreloadFile, "preload-file", c.PreloadFile, "host file written by the plugin and mounted as /etc/ld.so.preload (default: ld.so.preload beside the library)")
	fs.StringVar(&c.Mode, "mode", c.Mode, "how the kubelet is served: device-plugin (placed by Tessera's scheduler extender) or dra (ResourceSlices of driver gpu.tessera.dev, placed by kube-scheduler)")
	fs.StringVar(&c.DRAPluginDir, "dra-plugin-dir", c.DRAPluginDir, "the DRA plugin's directory (holds dra.sock and the checkpoint of prepared claims)")
	fs.StringVar(&c.PluginRegistryDir, "plugin-registry-dir", c.PluginRegistryDir, "the kubelet's plugin registry directory, where the DRA plugin registers")
	fs.StringVar(&c.PluginDir, "device-plugin-dir", c.PluginDir, "the kubelet's device-plugin directory (holds kubelet.sock)")
	fs.DurationVar(&c.HeartbeatPeriod.Duration, "heartbeat-period", c.HeartbeatPeriod.Duration, "how often the node's Lease is renewed; the GPUNode status is written only when it changes")
	fs.StringVar(&c.LeaseNamespace, "lease-namespace", c.LeaseNamespace, "namespace of the node's Lease (named like the node); the scheduler extender must watch the same")
	fs.StringVar(&c.SimulatedGPUFile, "simulated-gpu-file", c.SimulatedGPUFile, "read GPUs from this YAML/JSON file instead of NVML")
	fs.DurationVar(&c.SimulatedReloadPeriod.Duration, "simulated-reload-period", c.SimulatedReloadPeriod.Duration, "how often the simulated GPU file is read for health changes")
	fs.DurationVar(&c.RescanPeriod.Duration, "rescan-period", c.RescanPeriod.Duration, "how often the node's GPUs are listed again, so that a MIG layout changed while the plugin runs is served")
	fs.StringVar(&c.MetricsAddress, "metrics-address", c.MetricsAddress, "host:port serving /metrics and /healthz, and nothing else; empty turns it off. Loopback by default; in a pod, set the pod's address (such as :9401) for Prometheus")
	fs.StringVar(&c.ProcRoot, "proc-root", c.ProcRoot, "proc file system used to map GPU processes to pods")
	fs.DurationVar(&c.HealthRecoveryPeriod.Duration, "health-recovery-period", c.HealthRecoveryPeriod.Duration, "how long an unhealthy GPU must stay quiet before it is healthy again")
	fs.DurationVar(&c.AllocationLookupTimeout.Duration, "allocation-lookup-timeout", c.AllocationLookupTimeout.Duration, "how long Allocate waits for a GPUAllocation its cache has not seen")
	fs.BoolVar(&c.DynamicMIG, "dynamic-mig", c.DynamicMIG, "serve GPUs in MIG mode whole, with their MIG geometry, and make each container's MIG instance when the kubelet allocates it, or in DRA mode prepares its claim")
	fs.StringVar(&c.DeviceListStrategy, "device-list-strategy", c.DeviceListStrategy, "how containers get their GPUs: envvar, volume-mounts or cdi")
	fs.StringVar(&c.CDISpecDir, "cdi-spec-dir", c.CDISpecDir, "directory the container runtime reads CDI specs from (strategy cdi, and DRA mode's spec per prepared request)")
	fs.StringVar(&c.DriverRoot, "driver-root", c.DriverRoot, "where the plugin sees the NVIDIA driver's root; set, NVML is loaded from there rather than injected by the container toolkit")
	fs.StringVar(&c.HostDriverRoot, "host-driver-root", c.HostDriverRoot, "the host path of --driver-root, named in the CDI spec")
	fs.StringVar(&c.PodResourcesSocket, "pod-resources-socket", c.PodResourcesSocket, "the kubelet's pod-resources socket, from which the plugin learns which pod each Allocate serves, so that GPU pods are bound to the node without waiting for each other; empty: one at a time")
	logsapi.AddFlags(o.Logs, fs)
	o.Version = version.AddFlag(fs, "tessera-device-plugin")
}

// Parse reads the command line: the configuration file, if --config names
// one, then every flag given over it.
func Parse(name string, args []string) (*Options, error) {
	o := &Options{Config: config.Default(), Logs: logsapi.NewLoggingConfiguration()}
	fs := pflag.NewFlagSet(name, pflag.ContinueOnError)
	o.addFlags(fs)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if o.Version.Given() {
		return o, nil
	}
	if o.ConfigFile != "" {
		cfg, err := config.Load(o.ConfigFile)
		if err != nil {
			return nil, err
		}
		// Bind a fresh flag set to the file's values and parse again, so
		// that only the flags on the command line override the file.
		o = &Options{Config: cfg, Logs: o.Logs}
		fs = pflag.NewFlagSet(name, pflag.ContinueOnError)
		o.addFlags(fs)
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
	}
	if o.Config.NodeName == "" {
		o.Config.NodeName = os.Getenv("NODE_NAME")
	}
	if args := fs.Args(); len(args) > 0 {
		return nil, fmt.Errorf("unexpected arguments %q", args)
	}
	return o, nil
}
