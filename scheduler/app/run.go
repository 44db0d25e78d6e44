package app

import (
	"context"
	"fmt"
	"net"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/internal/httpserver"
	"github.com/tessera-gpu/tessera/scheduler/options"
)

// Listeners are the sockets the extender serves on.
type Listeners struct {
	// Extender serves the extender's verbs as well as health and metrics.
	// Only kube-scheduler may reach it: the bind verb binds any pod to any
	// node.
	Extender net.Listener
	// Metrics, when not nil, serves only /metrics, /healthz and /readyz,
	// for Prometheus and the kubelet's probes.
	Metrics net.Listener
}

// Run serves the extender with the given options until ctx ends.
func Run(ctx context.Context, o *options.Options) error {
	restConfig, err := restConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	var ls Listeners
	if ls.Extender, err = net.Listen("tcp", o.Config.ListenAddress); err != nil {
		return fmt.Errorf("listening on %s: %w", o.Config.ListenAddress, err)
	}
	if o.Config.MetricsAddress != "" {
		if ls.Metrics, err = net.Listen("tcp", o.Config.MetricsAddress); err != nil {
			ls.Extender.Close()
			return fmt.Errorf("listening on the metrics address %s: %w", o.Config.MetricsAddress, err)
		}
	}
	return Serve(ctx, o.Config, restConfig, ls)
}

// Serve runs the extender on ls until ctx ends, then shuts its servers down
// and closes the listeners. It returns once everything it started has
// stopped.
func Serve(ctx context.Context, cfg *options.Config, restConfig *rest.Config, ls Listeners) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	s, err := newServer(ctx, cfg, restConfig)
	if err != nil {
		ls.Extender.Close()
		if ls.Metrics != nil {
			ls.Metrics.Close()
		}
		return err
	}
	defer func() {
		cancel()
		s.stop()
	}()

	// Binds cut off at shutdown are retried by kube-scheduler.
	timeouts := serverTimeouts(cfg)
	servers := []httpserver.Listener{{Server: httpserver.New(ctx, s.mux, timeouts), Listener: ls.Extender}}
	logger.Info("Scheduler extender serving", "address", ls.Extender.Addr().String())
	if ls.Metrics != nil {
		servers = append(servers, httpserver.Listener{Server: httpserver.New(ctx, s.operational, timeouts), Listener: ls.Metrics})
		logger.Info("Serving metrics and health", "address", ls.Metrics.Addr().String())
	}
	err = httpserver.Serve(ctx, 5*time.Second, servers...)
	logger.Info("Scheduler extender stopped")
	return err
}

// serverTimeouts are the defaults, with room in the answer for a bind
// that waits its longest for its node's turn and then writes to the API.
func serverTimeouts(cfg *options.Config) httpserver.Timeouts {
	t := httpserver.DefaultTimeouts()
	t.Write = cfg.BindWaitTimeout.Duration + t.Write
	return t
}

func restConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("loading in-cluster configuration (use --kubeconfig outside a cluster): %w", err)
		}
		return c, nil
	}
	c, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	return c, nil
}
