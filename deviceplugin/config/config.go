package config

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
	"github.com/tessera-gpu/tessera/deviceplugin/podresources"
)

// Configuration is everything the device plugin can be told. Durations are
// written as Go durations ("15s") in the file.
type Configuration struct {
	// Mode is how the daemon serves the kubelet: ModeDevicePlugin (GPU
	// slices placed by Tessera's scheduler extender, handed out through the
	// device-plugin API) or ModeDRA (the GPUs published as ResourceSlices
	// of driver gpu.tessera.dev, placed by kube-scheduler and prepared
	// through the DRA kubelet-plugin API).
	Mode string `json:"mode"`
	// NodeName is the Kubernetes node the plugin runs on; its GPUNode has
	// the same name.
	NodeName string `json:"nodeName"`
	// SplitCount is how many containers may share one GPU. The plugin
	// offers the kubelet SplitCount virtual devices per GPU.
	SplitCount int32 `json:"splitCount"`
	// MemoryScaling multiplies each GPU's memory before it is published; a
	// value above 1 over-commits memory.
	MemoryScaling float64 `json:"memoryScaling"`
	// CoreScaling multiplies each GPU's compute (100 per GPU) before it is
	// published; a value above 1 over-commits compute.
	CoreScaling float64 `json:"coreScaling"`
	// ResourceName is the extended resource the plugin registers with the
	// kubelet: the GPU count, nvidia.com/gpu by default.
	ResourceName string `json:"resourceName"`
	// LibraryPath is the host path of the HAMi-core library that enforces
	// the limits inside the container. Empty: containers get the limit
	// variables but no library.
	LibraryPath string `json:"libraryPath,omitempty"`
	// LibraryContainerPath is where the library appears in the container.
	LibraryContainerPath string `json:"libraryContainerPath"`
	// PreloadFile is the host file, written by the plugin, that is mounted
	// as the container's /etc/ld.so.preload. Empty: ld.so.preload beside
	// LibraryPath.
	PreloadFile string `json:"preloadFile,omitempty"`
	// PluginDir is the kubelet's device-plugin directory, which holds
	// kubelet.sock and the plugin's own socket.
	PluginDir string `json:"pluginDir"`
	// DRAPluginDir is the DRA plugin's data directory: its socket and the
	// checkpoint of prepared claims, which must outlive the daemon.
	DRAPluginDir string `json:"draPluginDir"`
	// PluginRegistryDir is the kubelet's plugin registry directory, where
	// the DRA plugin announces itself.
	PluginRegistryDir string `json:"pluginRegistryDir"`
	// HeartbeatPeriod is how often the node's Lease is renewed, the
	// plugin's heartbeat. The GPUNode status is written only when it
	// changes; it is also compared with the API's at this period.
	HeartbeatPeriod metav1.Duration `json:"heartbeatPeriod"`
	// LeaseNamespace holds the node's Lease, named like the node. The
	// scheduler extender must watch the same namespace.
	LeaseNamespace string `json:"leaseNamespace"`
	// SimulatedGPUFile, when set, makes the plugin read its GPUs from this
	// file instead of NVML.
	SimulatedGPUFile string `json:"simulatedGPUFile,omitempty"`
	// SimulatedReloadPeriod is how often the simulated-GPU file is read
	// again to pick up health changes.
	SimulatedReloadPeriod metav1.Duration `json:"simulatedReloadPeriod"`
	// RescanPeriod is how often the node's GPUs are listed again, so that
	// a MIG layout changed while the plugin runs (instances created or
	// destroyed with nvidia-smi) is served: the kubelet, the
	// ResourceSlice and the GPUNode get the new devices.
	RescanPeriod metav1.Duration `json:"rescanPeriod"`
	// MetricsAddress is the host:port serving /metrics and /healthz;
	// empty turns it off. Loopback by default; the Helm chart sets the
	// pod's address so that Prometheus reaches it. It serves nothing else.
	MetricsAddress string `json:"metricsAddress,omitempty"`
	// ProcRoot is the proc file system through which GPU processes are
	// mapped to pods (the host's /proc: the plugin needs hostPID).
	ProcRoot string `json:"procRoot"`
	// IgnoredXIDs are the NVML XID errors caused by an application rather
	// than the GPU; they do not mark a GPU unhealthy.
	IgnoredXIDs []uint64 `json:"ignoredXIDs"`
	// HealthRecoveryPeriod is how long an unhealthy GPU must stay free of
	// critical events, and answer NVML, before it is healthy again.
	HealthRecoveryPeriod metav1.Duration `json:"healthRecoveryPeriod"`
	// AllocationLookupTimeout bounds how long Allocate waits for the pod's
	// GPUAllocation to appear when the plugin's cache has not seen it yet.
	AllocationLookupTimeout metav1.Duration `json:"allocationLookupTimeout"`
	// DynamicMIG serves each GPU in MIG mode as itself, with its MIG
	// geometry, and makes the MIG instance the scheduler places for a
	// container when the kubelet allocates it (in DRA mode, prepares its
	// claim), destroying it when the pod ends. The GPU's MIG mode is
	// never changed: the administrator puts it in MIG mode. Instances the
	// administrator made on it are destroyed when no allocation needs
	// them. Not with the cdi device-list strategy.
	DynamicMIG bool `json:"dynamicMIG,omitempty"`
	// DeviceListStrategy is how a container's GPUs reach the NVIDIA
	// container runtime: StrategyEnvVar, StrategyVolumeMounts or
	// StrategyCDI.
	DeviceListStrategy string `json:"deviceListStrategy"`
	// CDISpecDir is the directory the container runtime reads CDI specs
	// from; with StrategyCDI the plugin writes its GPUs' spec there, and
	// in ModeDRA one spec per prepared request.
	CDISpecDir string `json:"cdiSpecDir"`
	// DriverRoot is where the plugin sees the root of the NVIDIA driver's
	// files (a host path mounted into its container). Set, the plugin
	// loads NVML from there instead of relying on the container toolkit,
	// and the CDI spec mounts the driver's libraries from there. Empty:
	// NVML is found by the dynamic loader.
	DriverRoot string `json:"driverRoot,omitempty"`
	// HostDriverRoot is the host path of DriverRoot: the CDI spec names
	// host paths, which the container runtime mounts.
	HostDriverRoot string `json:"hostDriverRoot"`
	// PodResourcesSocket is the kubelet's pod-resources socket. While it
	// answers, the plugin learns from it which pod each Allocate call
	// serves, and the GPUNode says so (status.podIdentification
	// PodResources): the scheduler then binds GPU pods to the node
	// without waiting for the kubelet to serve the one before. Empty, or
	// not answering: one GPU pod at a time is in flight on the node.
	PodResourcesSocket string `json:"podResourcesSocket"`
}

// Device-list strategies: how a container's GPUs reach the NVIDIA
// container runtime. They are the NVIDIA device plugin's.
const (
	// StrategyEnvVar lists the GPU UUIDs in NVIDIA_VISIBLE_DEVICES.
	StrategyEnvVar = "envvar"
	// StrategyVolumeMounts mounts one empty file per GPU under
	// /var/run/nvidia-container-devices, which a toolkit configured with
	// accept-nvidia-visible-devices-as-volume-mounts reads; unlike the
	// variable, an image or an unprivileged pod cannot set it.
	StrategyVolumeMounts = "volume-mounts"
	// StrategyCDI names the GPUs as CDI devices of the spec the plugin
	// writes, which a CDI-enabled runtime (containerd 1.7+, CRI-O 1.23+)
	// applies.
	StrategyCDI = "cdi"
)

// DeviceListStrategies are the supported strategies.
func DeviceListStrategies() []string {
	return []string{StrategyEnvVar, StrategyVolumeMounts, StrategyCDI}
}

// Modes of the daemon.
const (
	ModeDevicePlugin = "device-plugin"
	ModeDRA          = "dra"
)

// Modes are the valid values of Mode.
func Modes() []string { return []string{ModeDevicePlugin, ModeDRA} }

// Defaults of the fields a file or flag leaves unset.
const (
	DefaultMode                 = ModeDevicePlugin
	DefaultDRAPluginDir         = "/var/lib/kubelet/plugins/gpu.tessera.dev"
	DefaultPluginRegistryDir    = "/var/lib/kubelet/plugins_registry"
	DefaultSplitCount           = 10
	DefaultResourceName         = "nvidia.com/gpu"
	DefaultPluginDir            = "/var/lib/kubelet/device-plugins"
	DefaultLibraryContainerPath = "/usr/local/vgpu/libvgpu.so"
	DefaultHeartbeatPeriod      = 15 * time.Second
	DefaultSimulatedReload      = 5 * time.Second
	DefaultRescanPeriod         = 30 * time.Second
	DefaultMetricsAddress       = "127.0.0.1:9401"
	DefaultProcRoot             = "/proc"
	DefaultHealthRecovery       = 5 * time.Minute
	DefaultAllocationLookup     = 5 * time.Second
	DefaultDeviceListStrategy   = StrategyEnvVar
	DefaultCDISpecDir           = "/var/run/cdi"
	DefaultHostDriverRoot       = "/"
	DefaultPodResourcesSocket   = podresources.DefaultSocket
)

// DefaultIgnoredXIDs are XIDs an application causes (graphics engine
// exception, memory page fault, stopped processing, preemptive cleanup,
// video decoder exception, context switch timeout), as NVIDIA's own device
// plugin ignores them.
func DefaultIgnoredXIDs() []uint64 { return []uint64{13, 31, 43, 45, 68, 109} }

// Default returns the configuration with every default set.
func Default() Configuration {
	return Configuration{
		Mode:                    DefaultMode,
		DRAPluginDir:            DefaultDRAPluginDir,
		PluginRegistryDir:       DefaultPluginRegistryDir,
		SplitCount:              DefaultSplitCount,
		MemoryScaling:           1,
		CoreScaling:             1,
		ResourceName:            DefaultResourceName,
		LibraryContainerPath:    DefaultLibraryContainerPath,
		PluginDir:               DefaultPluginDir,
		HeartbeatPeriod:         metav1.Duration{Duration: DefaultHeartbeatPeriod},
		LeaseNamespace:          gpuv1alpha1.DefaultNodeLeaseNamespace,
		SimulatedReloadPeriod:   metav1.Duration{Duration: DefaultSimulatedReload},
		RescanPeriod:            metav1.Duration{Duration: DefaultRescanPeriod},
		MetricsAddress:          DefaultMetricsAddress,
		ProcRoot:                DefaultProcRoot,
		IgnoredXIDs:             DefaultIgnoredXIDs(),
		HealthRecoveryPeriod:    metav1.Duration{Duration: DefaultHealthRecovery},
		AllocationLookupTimeout: metav1.Duration{Duration: DefaultAllocationLookup},
		DeviceListStrategy:      DefaultDeviceListStrategy,
		CDISpecDir:              DefaultCDISpecDir,
		HostDriverRoot:          DefaultHostDriverRoot,
		PodResourcesSocket:      DefaultPodResourcesSocket,
	}
}

// PreloadFilePath returns the host file mounted as /etc/ld.so.preload, or ""
// when no library is configured.
func (c *Configuration) PreloadFilePath() string {
	switch {
	case c.LibraryPath == "":
		return ""
	case c.PreloadFile != "":
		return c.PreloadFile
	default:
		return filepathJoinDir(c.LibraryPath, "ld.so.preload")
	}
}

// Library returns where the HAMi-core library and its preload file are on
// the node and in containers.
func (c *Configuration) Library() hamicore.Library {
	return hamicore.Library{HostPath: c.LibraryPath, ContainerPath: c.LibraryContainerPath, PreloadHostPath: c.PreloadFilePath()}
}
