package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/deviceplugin/plugin"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
)

// Client rate limits: a node's plugin writes little, but Allocate must not
// queue behind heartbeats.
const (
	clientQPS   = 20
	clientBurst = 40
	userAgent   = "tessera-device-plugin"
)

// Run builds the clients and runs the plugin until ctx ends.
func Run(ctx context.Context, o *Options) error {
	restConfig, err := clientConfig(o.Kubeconfig)
	if err != nil {
		return err
	}
	deps, err := NewDependencies(restConfig)
	if err != nil {
		return err
	}
	p, err := plugin.New(o.Config, deps)
	if err != nil {
		return err
	}
	return p.Run(ctx)
}

// NewDependencies builds the plugin's clients as the daemon does: its rate
// limits and user agent, protobuf for pods, and connections that wait for
// an API server that restarts.
func NewDependencies(restConfig *rest.Config) (plugin.Dependencies, error) {
	restConfig = kubeclient.WaitForRestarts(restConfig, clock.RealClock{})
	restConfig.QPS, restConfig.Burst = clientQPS, clientBurst
	restConfig = rest.AddUserAgent(restConfig, userAgent)
	kube, err := kubeclient.New(restConfig)
	if err != nil {
		return plugin.Dependencies{}, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	tessera, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return plugin.Dependencies{}, fmt.Errorf("creating the Tessera client: %w", err)
	}
	return plugin.Dependencies{Kube: kube, Tessera: tessera}, nil
}

func clientConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("reading the in-cluster configuration (or pass --kubeconfig): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("reading kubeconfig %s: %w", kubeconfig, err)
	}
	return cfg, nil
}
