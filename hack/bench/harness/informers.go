package harness

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"

	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
)

// Informers are the bench's own watches on the bench namespace: pods,
// in protobuf as Tessera's daemons and kube-scheduler watch them, so that
// the bench's share of the CPUs stays small, and Tessera's objects.
type Informers struct {
	Kube    informers.SharedInformerFactory
	Tessera externalversions.SharedInformerFactory
}

// NewInformers are the bench's informer factories on env's control plane.
func NewInformers(env *ClusterEnv) (*Informers, error) {
	watchClient, err := kubeclient.New(env.ControlPlane.Config)
	if err != nil {
		return nil, err
	}
	return &Informers{
		Kube:    informers.NewSharedInformerFactoryWithOptions(watchClient, 0, informers.WithNamespace(Namespace)),
		Tessera: externalversions.NewSharedInformerFactoryWithOptions(env.ControlPlane.Tessera, 0, externalversions.WithNamespace(Namespace)),
	}, nil
}

// Start starts the informers asked for so far, until ctx ends, and waits
// until they have synced.
func (b *Informers) Start(ctx context.Context) error {
	b.Kube.Start(ctx.Done())
	b.Tessera.Start(ctx.Done())
	for typ, ok := range b.Kube.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing the informer for %v: %w", typ, context.Cause(ctx))
		}
	}
	for typ, ok := range b.Tessera.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing the informer for %v: %w", typ, context.Cause(ctx))
		}
	}
	return nil
}

// Shutdown waits for the informers to stop, once their ctx has ended.
func (b *Informers) Shutdown() {
	b.Kube.Shutdown()
	b.Tessera.Shutdown()
}
