package app

import (
	"fmt"

	"k8s.io/client-go/rest"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
)

// Client rate limits. Admission reads from informers and writes only a
// ResourceClaimTemplate per new request shape and namespace, but a burst of
// new shapes must not queue behind client-go's default limit (5 QPS, burst
// 10) past the API server's 5 s webhook timeout.
const (
	clientQPS   = 50
	clientBurst = 100
	userAgent   = "tessera-webhook"
)

// NewDependencies builds the webhook's clients from restConfig as the
// daemon does: its rate limits and user agent, and protobuf for
// Kubernetes' own API.
func NewDependencies(restConfig *rest.Config) (Dependencies, error) {
	restConfig = rest.CopyConfig(restConfig)
	restConfig.QPS, restConfig.Burst = clientQPS, clientBurst
	restConfig.UserAgent = userAgent
	kube, err := kubeclient.New(restConfig)
	if err != nil {
		return Dependencies{}, fmt.Errorf("creating the Kubernetes client: %w", err)
	}
	tessera, err := versioned.NewForConfig(restConfig)
	if err != nil {
		return Dependencies{}, fmt.Errorf("creating the Tessera client: %w", err)
	}
	return Dependencies{Kube: kube, Tessera: tessera}, nil
}
