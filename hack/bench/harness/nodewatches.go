package harness

import (
	"context"
	"fmt"
	"net"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	dpconfig "github.com/tessera-gpu/tessera/deviceplugin/config"
	"github.com/tessera-gpu/tessera/deviceplugin/plugin"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
)

// nodesPerConnection is how many nodes' watches share one connection to
// the API server: two streams each, well under the streams an HTTP/2
// connection may carry. A cluster's daemons each have their own.
const nodesPerConnection = 64

// StartNodeWatches opens, for each of nodes nodes, the watches Tessera's
// node daemon keeps in device-plugin mode (its pods and GPUNode, each
// selected by a field, and the GPUAllocations of its pods, read by name)
// through the daemon's own code, and waits until they have synced. The API
// server sends each event of a custom resource to every watch of that
// resource and lets the watch's selector drop it, so what a fleet of
// daemons' GPUNode watches costs it grows with the nodes. stop ends the
// watches.
func StartNodeWatches(ctx context.Context, config *rest.Config, nodes int) (stop func(), err error) {
	ctx, cancel := context.WithCancel(ctx)
	var stops []func()
	stop = func() {
		// An informer factory's Shutdown waits for informers that end
		// with their context.
		cancel()
		for _, s := range stops {
			s()
		}
	}
	start := time.Now()
	var synced []cache.InformerSynced
	var kube kubernetes.Interface
	var tessera versioned.Interface
	for i := range nodes {
		if i%nodesPerConnection == 0 {
			if kube, tessera, err = newConnection(config); err != nil {
				stop()
				return nil, err
			}
		}
		s, stopNode, err := plugin.StartNodeWatches(ctx, kube, tessera, NodeName(i), dpconfig.DefaultResourceName)
		if err != nil {
			stop()
			return nil, err
		}
		synced = append(synced, s...)
		stops = append(stops, stopNode)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		stop()
		return nil, fmt.Errorf("syncing the node daemons' watches: %w", context.Cause(ctx))
	}
	klog.FromContext(ctx).Info("Opened the node daemons' watches", "nodes", nodes, "watches", len(synced), "after", time.Since(start).Round(time.Millisecond))
	return stop, nil
}

// newConnection makes clients that share a connection of their own: a
// configuration with a dialer of its own gets a transport of its own.
func newConnection(config *rest.Config) (kubernetes.Interface, versioned.Interface, error) {
	c := rest.CopyConfig(config)
	c.Dial = (&net.Dialer{}).DialContext
	kube, err := kubeclient.New(c)
	if err != nil {
		return nil, nil, err
	}
	tessera, err := versioned.NewForConfig(c)
	if err != nil {
		return nil, nil, err
	}
	return kube, tessera, nil
}
