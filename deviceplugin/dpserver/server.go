package dpserver

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	"k8s.io/utils/clock"
)

// KubeletSocket is the kubelet's registration socket in the plugin directory.
const KubeletSocket = "kubelet.sock"

// registerTimeout bounds one registration call.
const registerTimeout = 10 * time.Second

// Config wires a Server.
type Config struct {
	// ResourceName is the count resource registered, such as nvidia.com/gpu.
	ResourceName string
	// PluginDir is the kubelet's device-plugin directory.
	PluginDir string
	// SplitCount is the number of virtual devices per GPU.
	SplitCount int
	// Devices are the GPUs offered to the kubelet.
	Devices Devices
	// Allocator answers the allocation calls.
	Allocator Allocator
	// Observer, if set, is told about every Allocate call.
	Observer AllocateObserver
	// Clock paces the kubelet checks.
	Clock clock.WithTicker
	// CheckPeriod is how often the plugin looks for a restarted kubelet,
	// and retries a failed registration.
	CheckPeriod time.Duration
	// OnRegistration, if set, is called when the plugin registers (err nil)
	// or stops being registered (err says why).
	OnRegistration func(err error)
}

// Server serves the device-plugin API and keeps the plugin registered.
type Server struct {
	cfg        Config
	socketName string
}

// New returns a server; nothing is served until Run.
func New(cfg Config) *Server {
	if cfg.CheckPeriod <= 0 {
		cfg.CheckPeriod = time.Second
	}
	if cfg.OnRegistration == nil {
		cfg.OnRegistration = func(error) {}
	}
	return &Server{cfg: cfg, socketName: SocketName(cfg.ResourceName)}
}

// SocketName is the plugin's socket file for a resource, such as
// "tessera-nvidia.com-gpu.sock".
func SocketName(resourceName string) string {
	return "tessera-" + strings.ReplaceAll(resourceName, "/", "-") + ".sock"
}

// SocketPath is where the plugin serves.
func (s *Server) SocketPath() string { return filepath.Join(s.cfg.PluginDir, s.socketName) }

func (s *Server) kubeletSocket() string { return filepath.Join(s.cfg.PluginDir, KubeletSocket) }

// Run serves and registers until ctx ends, starting over whenever the
// kubelet restarts. Its socket is removed when it returns.
func (s *Server) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	for ctx.Err() == nil {
		err := s.serveOnce(ctx)
		if ctx.Err() != nil {
			break
		}
		if err != nil {
			logger.Error(err, "Device plugin not registered; retrying", "resource", s.cfg.ResourceName, "retryIn", s.cfg.CheckPeriod)
			s.cfg.OnRegistration(err)
			select {
			case <-ctx.Done():
			case <-s.cfg.Clock.After(s.cfg.CheckPeriod):
			}
		}
	}
	s.cfg.OnRegistration(errors.New("the device plugin stopped"))
	return nil
}

// serveOnce waits for the kubelet, serves, registers, and returns when the
// kubelet restarts (nil), on failure (the error), or when ctx ends.
func (s *Server) serveOnce(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	kubelet, err := s.waitForKubelet(ctx)
	if err != nil || kubelet == nil {
		return err
	}
	if err := os.Remove(s.SocketPath()); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing stale socket: %w", err)
	}
	lis, err := net.Listen("unix", s.SocketPath())
	if err != nil {
		return fmt.Errorf("listening on %s: %w", s.SocketPath(), err)
	}
	stop := make(chan struct{})
	grpcServer := grpc.NewServer(grpc.UnaryInterceptor(loggingInterceptor(logger)))
	pluginapi.RegisterDevicePluginServer(grpcServer, &service{
		devices:    s.cfg.Devices,
		allocator:  s.cfg.Allocator,
		splitCount: s.cfg.SplitCount,
		observer:   s.cfg.Observer,
		now:        s.cfg.Clock.Now,
		stop:       stop,
	})
	served := make(chan error, 1)
	go func() { served <- grpcServer.Serve(lis) }()
	defer func() {
		close(stop)
		grpcServer.Stop()
		<-served
		_ = os.Remove(s.SocketPath())
	}()

	if err := s.register(ctx); err != nil {
		return err
	}
	logger.Info("Registered with the kubelet", "resource", s.cfg.ResourceName, "socket", s.SocketPath())
	s.cfg.OnRegistration(nil)

	ticker := s.cfg.Clock.NewTicker(s.cfg.CheckPeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			served <- err
			return fmt.Errorf("serving the device plugin: %w", err)
		case <-ticker.C():
		}
		now, err := os.Stat(s.kubeletSocket())
		if err != nil || !os.SameFile(kubelet, now) {
			logger.Info("Kubelet restarted; registering again", "kubeletSocket", s.kubeletSocket())
			s.cfg.OnRegistration(errors.New("the kubelet restarted; registering again"))
			return nil
		}
		if _, err := os.Stat(s.SocketPath()); err != nil {
			logger.Info("Plugin socket removed; serving and registering again", "socket", s.SocketPath())
			s.cfg.OnRegistration(errors.New("the plugin socket was removed; registering again"))
			return nil
		}
	}
}

// waitForKubelet returns kubelet.sock once it exists; nil when ctx ends.
func (s *Server) waitForKubelet(ctx context.Context) (os.FileInfo, error) {
	logger := klog.FromContext(ctx)
	logged := false
	for {
		info, err := os.Stat(s.kubeletSocket())
		if err == nil {
			return info, nil
		}
		if !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("looking for the kubelet: %w", err)
		}
		if !logged {
			logger.Info("Waiting for the kubelet", "kubeletSocket", s.kubeletSocket())
			s.cfg.OnRegistration(fmt.Errorf("waiting for the kubelet socket %s", s.kubeletSocket()))
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil, nil
		case <-s.cfg.Clock.After(s.cfg.CheckPeriod):
		}
	}
}

// register tells the kubelet about the plugin.
func (s *Server) register(ctx context.Context) error {
	conn, err := grpc.NewClient("unix://"+s.kubeletSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return fmt.Errorf("connecting to the kubelet at %s: %w", s.kubeletSocket(), err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, registerTimeout)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version:      pluginapi.Version,
		Endpoint:     s.socketName,
		ResourceName: s.cfg.ResourceName,
		Options:      &pluginapi.DevicePluginOptions{GetPreferredAllocationAvailable: true},
	})
	if err != nil {
		return fmt.Errorf("registering %s with the kubelet at %s: %w", s.cfg.ResourceName, s.kubeletSocket(), err)
	}
	return nil
}

// loggingInterceptor gives every call the plugin's logger and logs failures.
func loggingInterceptor(logger klog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		l := logger.WithValues("method", info.FullMethod)
		resp, err := handler(klog.NewContext(ctx, l), req)
		if err != nil {
			l.Error(err, "Kubelet call failed")
		}
		return resp, err
	}
}
