package app

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
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
		closeAll(ls)
		return err
	}
	defer func() {
		cancel()
		s.stop()
	}()

	// Binds cut off at shutdown are retried by kube-scheduler.
	timeouts := serverTimeouts(cfg)
	verbs := httpserver.New(ctx, s.mux, timeouts)
	if verbs.TLSConfig, err = clientTLS(cfg); err != nil {
		closeAll(ls)
		return err
	}
	servers := []httpserver.Listener{{Server: verbs, Listener: ls.Extender}}
	logger.Info("Scheduler extender serving", "address", ls.Extender.Addr().String(), "tls", verbs.TLSConfig != nil)
	if ls.Metrics != nil {
		servers = append(servers, httpserver.Listener{Server: httpserver.New(ctx, s.operational, timeouts), Listener: ls.Metrics})
		logger.Info("Serving metrics and health", "address", ls.Metrics.Addr().String())
	}
	err = httpserver.Serve(ctx, 5*time.Second, servers...)
	logger.Info("Scheduler extender stopped")
	return err
}

// closeAll closes the listeners that Serve will not serve.
func closeAll(ls Listeners) {
	ls.Extender.Close()
	if ls.Metrics != nil {
		ls.Metrics.Close()
	}
}

// clientTLS is the TLS of the extender's listener: nil (plain HTTP, for
// loopback) without a certificate; with one, HTTPS that requires a client
// certificate from the client authority, when one is set.
func clientTLS(cfg *options.Config) (*tls.Config, error) {
	if cfg.TLSCertFile == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(cfg.TLSCertFile, cfg.TLSKeyFile)
	if err != nil {
		return nil, fmt.Errorf("loading the serving certificate %s: %w", cfg.TLSCertFile, err)
	}
	c := httpserver.TLSConfig(func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return &cert, nil })
	if cfg.ClientCAFile == "" {
		return c, nil
	}
	pem, err := os.ReadFile(cfg.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("reading the client authority: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the client authority %s holds no PEM certificate", cfg.ClientCAFile)
	}
	c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	return c, nil
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
