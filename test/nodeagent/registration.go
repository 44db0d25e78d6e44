package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

var _ pluginapi.RegistrationServer = (*registration)(nil)

// registration is the kubelet's Registration service.
type registration struct {
	pluginapi.UnimplementedRegistrationServer
	ctx   context.Context
	agent *Agent
}

func (r *registration) Register(_ context.Context, req *pluginapi.RegisterRequest) (*pluginapi.Empty, error) {
	if req.Version != pluginapi.Version {
		return nil, fmt.Errorf("device-plugin API version %q is not supported: want %q", req.Version, pluginapi.Version)
	}
	conn, err := grpc.NewClient("unix://"+filepath.Join(r.agent.PluginDir, req.Endpoint),
		grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dialing plugin %s at %s: %w", req.ResourceName, req.Endpoint, err)
	}
	p := newPlugin(req.ResourceName, pluginapi.NewDevicePluginClient(conn), conn, req.Options)
	r.agent.setPlugin(p)
	go p.watch(r.ctx, r.agent.advertise)
	klog.FromContext(r.ctx).V(2).Info("Registered device plugin", "node", r.agent.NodeName, "resource", req.ResourceName, "endpoint", req.Endpoint)
	return &pluginapi.Empty{}, nil
}

// serveRegistration serves kubelet.sock in the plugin directory until ctx ends.
func (a *Agent) serveRegistration(ctx context.Context) error {
	if err := os.MkdirAll(a.PluginDir, 0o755); err != nil {
		return err
	}
	if err := clearPluginDir(a.PluginDir); err != nil {
		return err
	}
	socket := filepath.Join(a.PluginDir, filepath.Base(pluginapi.KubeletSocket))
	l, err := net.Listen("unix", socket)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", socket, err)
	}
	server := grpc.NewServer()
	pluginapi.RegisterRegistrationServer(server, &registration{ctx: ctx, agent: a})
	go func() {
		<-ctx.Done()
		stopped := make(chan struct{})
		go func() { server.GracefulStop(); close(stopped) }()
		select {
		case <-stopped:
		case <-time.After(5 * time.Second):
			server.Stop()
		}
	}()
	return server.Serve(l)
}

// clearPluginDir removes every file in the plugin directory, the sockets of
// plugins registered with an earlier run included, as the kubelet's device
// manager does when it starts (it keeps only its checkpoint file, which the
// agent has none of, and folders). A plugin learns of the restart from its
// socket disappearing and kubelet.sock being created again, often with the
// inode it had before.
func clearPluginDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("clearing the plugin directory: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		if err := os.Remove(filepath.Join(dir, e.Name())); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("clearing the plugin directory: %w", err)
		}
	}
	return nil
}
