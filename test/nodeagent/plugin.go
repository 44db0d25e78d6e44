package nodeagent

import (
	"context"
	"slices"
	"sync"
	"time"

	"google.golang.org/grpc"
	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// plugin is one registered device plugin and the devices it offers.
type plugin struct {
	resource string
	client   pluginapi.DevicePluginClient
	conn     *grpc.ClientConn
	options  *pluginapi.DevicePluginOptions

	mu      sync.Mutex
	healthy map[string]bool // device ID → healthy
	seen    chan struct{}   // closed once the first device list arrived
	once    sync.Once
}

func newPlugin(resource string, client pluginapi.DevicePluginClient, conn *grpc.ClientConn, options *pluginapi.DevicePluginOptions) *plugin {
	return &plugin{resource: resource, client: client, conn: conn, options: options,
		healthy: map[string]bool{}, seen: make(chan struct{})}
}

// watch follows ListAndWatch until the stream or ctx ends, calling
// advertise with the number of healthy devices after every change.
func (p *plugin) watch(ctx context.Context, advertise func(ctx context.Context, resource string, healthy int)) {
	logger := klog.FromContext(ctx)
	defer func() { _ = p.conn.Close() }()
	stream, err := p.client.ListAndWatch(ctx, &pluginapi.Empty{})
	if err != nil {
		logger.Error(err, "ListAndWatch failed", "resource", p.resource)
		return
	}
	for {
		resp, err := stream.Recv()
		if err != nil {
			if ctx.Err() == nil {
				logger.Info("ListAndWatch ended", "resource", p.resource, "err", err)
			}
			return
		}
		p.mu.Lock()
		p.healthy = make(map[string]bool, len(resp.Devices))
		healthy := 0
		for _, d := range resp.Devices {
			p.healthy[d.ID] = d.Health == pluginapi.Healthy
			if p.healthy[d.ID] {
				healthy++
			}
		}
		p.mu.Unlock()
		advertise(ctx, p.resource, healthy)
		p.once.Do(func() { close(p.seen) })
	}
}

// available returns the healthy device IDs not in use, sorted.
func (p *plugin) available(inUse map[string]bool) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []string
	for id, ok := range p.healthy {
		if ok && !inUse[id] {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// waitDevices waits a short while for the plugin's first device list.
func (p *plugin) waitDevices(ctx context.Context) {
	select {
	case <-p.seen:
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
	}
}
