package app

import (
	"context"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

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
	restConfig.QPS, restConfig.Burst = clientQPS, clientBurst
	restConfig = rest.AddUserAgent(restConfig, userAgent)
	kube, err := kubeclient.New(restConfig)
	if err != nil {
		return fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	tessera, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return fmt.Errorf("creating the Tessera client: %w", err)
	}
	p, err := plugin.New(o.Config, plugin.Dependencies{Kube: kube, Tessera: tessera})
	if err != nil {
		return err
	}
	return p.Run(ctx)
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
