package app

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/scheduler/options"
)

// Run serves the extender with the given options until ctx ends.
func Run(ctx context.Context, o *options.Options) error {
	restConfig, err := restConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.Config.ListenAddress)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Config.ListenAddress, err)
	}
	return Serve(ctx, o.Config, restConfig, ln)
}

// Serve runs the extender on ln until ctx ends, then shuts the server down
// and closes ln. It returns once everything it started has stopped.
func Serve(ctx context.Context, cfg *options.Config, restConfig *rest.Config, ln net.Listener) error {
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	s, err := newServer(ctx, cfg, restConfig)
	if err != nil {
		ln.Close()
		return err
	}
	defer func() {
		cancel()
		s.stop()
	}()

	httpServer := &http.Server{
		Handler:           s.mux,
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(ln) }()
	logger.Info("Scheduler extender serving", "address", ln.Addr().String())

	select {
	case <-ctx.Done():
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("serving HTTP: %w", err)
		}
	}
	shutdownCtx, done := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer done()
	if err := httpServer.Shutdown(shutdownCtx); err != nil {
		// Binds that wait for their node are cut off; kube-scheduler retries them.
		httpServer.Close()
	}
	logger.Info("Scheduler extender stopped")
	return nil
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
