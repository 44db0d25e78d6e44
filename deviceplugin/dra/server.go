package dra

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/nodestatus"
)

// ServerConfig is what a Server needs.
type ServerConfig struct {
	// NodeName is the node the slices are published for.
	NodeName string
	// Kube publishes ResourceSlices and reads claims.
	Kube kubernetes.Interface
	// Inventory is the node's GPUs.
	Inventory Devices
	// Cordoned returns the GPUs the administrator cordoned.
	Cordoned func() []string
	// Scaling is the capacity published for each GPU.
	Scaling nodestatus.Scaling
	// PluginDir holds the plugin's socket (dra.sock), which the kubelet
	// dials.
	PluginDir string
	// RegistrarDir is the kubelet's plugin registry directory, where the
	// plugin announces itself.
	RegistrarDir string
	// OnStarted, if set, is called once the plugin serves the kubelet.
	OnStarted func()
}

// Server runs the driver as the kubelet's DRA plugin and keeps the node's
// ResourceSlice in step with its GPUs.
type Server struct {
	cfg     ServerConfig
	driver  *Driver
	trigger chan struct{}
}

// NewServer returns a server for the driver; nothing runs until Run.
func NewServer(cfg ServerConfig, driver *Driver) *Server {
	return &Server{cfg: cfg, driver: driver, trigger: make(chan struct{}, 1)}
}

// Trigger asks for the slices to be published again, such as after the
// administrator cordoned a GPU.
func (s *Server) Trigger() {
	select {
	case s.trigger <- struct{}{}:
	default:
	}
}

// Run serves the kubelet and publishes until ctx ends. Publishing what is
// already published writes nothing, so a restarted daemon leaves its
// slices alone.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// Before the kubelet can ask for anything; what cannot be reconciled
	// now stays until the next start, and the node is served meanwhile.
	if err := s.driver.Reconcile(ctx, s.cfg.Kube); err != nil {
		logger.Error(err, "Reconciling prepared claims with the API failed")
	}
	helper, err := kubeletplugin.Start(ctx, s.driver,
		kubeletplugin.DriverName(gpuv1alpha1.DRADriverName),
		kubeletplugin.KubeClient(s.cfg.Kube),
		kubeletplugin.NodeName(s.cfg.NodeName),
		kubeletplugin.PluginDataDirectoryPath(s.cfg.PluginDir),
		kubeletplugin.RegistrarDirectoryPath(s.cfg.RegistrarDir),
	)
	if err != nil {
		return fmt.Errorf("starting the DRA kubelet plugin: %w", err)
	}
	defer helper.Stop()
	if s.cfg.OnStarted != nil {
		s.cfg.OnStarted()
	}
	for {
		changed := s.cfg.Inventory.Changed()
		resources := Resources(s.cfg.NodeName, s.cfg.Inventory.Devices(), s.cfg.Cordoned(), s.cfg.Scaling)
		if err := helper.PublishResources(ctx, resources); err != nil {
			return fmt.Errorf("publishing ResourceSlices: %w", err)
		}
		logger.V(2).Info("Published the node's GPUs", "driver", gpuv1alpha1.DRADriverName, "devices", len(resources.Pools[s.cfg.NodeName].Slices[0].Devices))
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		case <-s.trigger:
		}
	}
}
