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

	"github.com/fsnotify/fsnotify"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
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
	// CheckPeriod is how often the plugin retries a failed registration
	// and, besides watching the plugin directory, looks for a restarted
	// kubelet.
	CheckPeriod time.Duration
	// OnKubelet, if set, is called each time the plugin finds the kubelet,
	// before it registers: nothing is allocated until it returns.
	OnKubelet func(ctx context.Context)
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
	if cfg.OnKubelet == nil {
		cfg.OnKubelet = func(context.Context) {}
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
//
// A kubelet that starts clears the plugin directory (every socket but its
// checkpoint) and creates kubelet.sock again, often with the inode the old
// one had, so comparing kubelet.sock with what was seen before cannot tell.
// The plugin watches the directory instead and starts over when
// kubelet.sock is created or removed, or its own socket is removed. The
// periodic check stays as a fallback should the watch lose events.
func (s *Server) serveOnce(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	// The watch starts before anything is looked at, so that no change
	// after that look goes unseen.
	watcher, err := fsnotify.NewWatcher()
	if err != nil {
		return fmt.Errorf("watching the plugin directory %s: %w", s.cfg.PluginDir, err)
	}
	defer watcher.Close()
	if err := watcher.Add(s.cfg.PluginDir); err != nil {
		return fmt.Errorf("watching the plugin directory %s: %w", s.cfg.PluginDir, err)
	}
	kubelet, err := s.waitForKubelet(ctx, watcher)
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

	s.cfg.OnKubelet(ctx)
	if err := s.register(ctx); err != nil {
		return err
	}
	logger.Info("Registered with the kubelet", "resource", s.cfg.ResourceName, "socket", s.SocketPath())
	s.cfg.OnRegistration(nil)

	ticker := s.cfg.Clock.NewTicker(s.cfg.CheckPeriod)
	defer ticker.Stop()
	for {
		var reason string
		select {
		case <-ctx.Done():
			return nil
		case err := <-served:
			served <- err
			return fmt.Errorf("serving the device plugin: %w", err)
		case ev, ok := <-watcher.Events:
			if !ok {
				return errors.New("the watch of the plugin directory ended")
			}
			reason = s.restartReason(ev, kubelet)
		case err := <-watcher.Errors:
			// Events may have been lost (the queue overflowed): start
			// over rather than trust the registration.
			return fmt.Errorf("watching the plugin directory %s: %w", s.cfg.PluginDir, err)
		case <-ticker.C():
			reason = s.checkSockets(kubelet)
		}
		if reason != "" {
			logger.Info("Registering again", "reason", reason, "socket", s.SocketPath())
			s.cfg.OnRegistration(errors.New(reason + "; registering again"))
			return nil
		}
	}
}

// restartReason says why a change in the plugin directory ends the
// registration with kubelet, or "" when it does not.
func (s *Server) restartReason(ev fsnotify.Event, kubelet os.FileInfo) string {
	gone := ev.Has(fsnotify.Remove) || ev.Has(fsnotify.Rename)
	switch {
	case ev.Name == s.kubeletSocket() && ev.Has(fsnotify.Create):
		// The event may be about the very socket registered with, created
		// after the watch began and before the plugin looked.
		if now, err := os.Stat(s.kubeletSocket()); err != nil || !sameSocket(kubelet, now) {
			return "the kubelet restarted: " + KubeletSocket + " was created again"
		}
	case ev.Name == s.kubeletSocket() && gone:
		return "the kubelet stopped: " + KubeletSocket + " was removed"
	case ev.Name == s.SocketPath() && gone:
		// The event may be about a socket this server replaced.
		if _, err := os.Stat(s.SocketPath()); err != nil {
			return "the plugin socket was removed, as a starting kubelet does"
		}
	case ev.Name == filepath.Clean(s.cfg.PluginDir) && gone:
		return "the plugin directory was removed"
	}
	return ""
}

// checkSockets is the periodic fallback of the directory watch: it says
// why the registration is over, or "" when kubelet.sock is the one
// registered with and the plugin's socket is there.
func (s *Server) checkSockets(kubelet os.FileInfo) string {
	now, err := os.Stat(s.kubeletSocket())
	if err != nil || !sameSocket(kubelet, now) {
		return "the kubelet restarted: " + KubeletSocket + " changed"
	}
	if _, err := os.Stat(s.SocketPath()); err != nil {
		return "the plugin socket was removed"
	}
	return ""
}

// sameSocket says whether two looks at a socket saw one file. The inode
// alone cannot tell, as a socket created again often gets the old one's;
// the time it was made does.
func sameSocket(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.ModTime().Equal(b.ModTime())
}

// waitForKubelet returns kubelet.sock once it exists; nil when ctx ends. It
// looks again at every change in the directory, and periodically.
func (s *Server) waitForKubelet(ctx context.Context, watcher *fsnotify.Watcher) (os.FileInfo, error) {
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
		case _, ok := <-watcher.Events:
			if !ok {
				return nil, errors.New("the watch of the plugin directory ended")
			}
		case err := <-watcher.Errors:
			return nil, fmt.Errorf("watching the plugin directory %s: %w", s.cfg.PluginDir, err)
		case <-s.cfg.Clock.After(s.cfg.CheckPeriod):
		}
	}
}

// register tells the kubelet about the plugin.
func (s *Server) register(ctx context.Context) error {
	// The kubelet creates kubelet.sock when it binds, a moment before it
	// listens, and the directory watch wakes the plugin in between: keep
	// connecting, briefly, instead of failing on that first refusal.
	conn, err := grpc.NewClient("unix://"+s.kubeletSocket(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second,
		}}))
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
	}, grpc.WaitForReady(true))
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
