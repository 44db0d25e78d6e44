package main

import (
	"context"
	"fmt"

	"k8s.io/client-go/informers"

	"github.com/tessera-gpu/tessera/generated/informers/externalversions"
	"github.com/tessera-gpu/tessera/internal/kubeclient"
)

// benchInformers are the bench's own watches on the bench namespace: pods,
// in protobuf as Tessera's daemons and kube-scheduler watch them, so that
// the bench's share of the CPUs stays small, and Tessera's objects.
type benchInformers struct {
	kube    informers.SharedInformerFactory
	tessera externalversions.SharedInformerFactory
}

func newBenchInformers(env *clusterEnv) (*benchInformers, error) {
	watchClient, err := kubeclient.New(env.cp.Config)
	if err != nil {
		return nil, err
	}
	return &benchInformers{
		kube:    informers.NewSharedInformerFactoryWithOptions(watchClient, 0, informers.WithNamespace(benchNamespace)),
		tessera: externalversions.NewSharedInformerFactoryWithOptions(env.cp.Tessera, 0, externalversions.WithNamespace(benchNamespace)),
	}, nil
}

// start starts the informers asked for so far, until ctx ends, and waits
// until they have synced.
func (b *benchInformers) start(ctx context.Context) error {
	b.kube.Start(ctx.Done())
	b.tessera.Start(ctx.Done())
	for typ, ok := range b.kube.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing the informer for %v: %w", typ, context.Cause(ctx))
		}
	}
	for typ, ok := range b.tessera.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("syncing the informer for %v: %w", typ, context.Cause(ctx))
		}
	}
	return nil
}

// shutdown waits for the informers to stop, once their ctx has ended.
func (b *benchInformers) shutdown() {
	b.kube.Shutdown()
	b.tessera.Shutdown()
}
