package harness

import (
	"context"
	"sync"
)

// StartWatches starts the bench's informers on a row's cluster, with the
// handlers that add registers on them first, and the simulated kubelet
// where the row's scheduler writes GPUAllocations. stop ends them and
// waits for the kubelet's workers; the caller calls it before the control
// plane stops.
func StartWatches(ctx context.Context, env *ClusterEnv, row string, add func(*Informers) error) (watches *Informers, kubelet *KubeletSim, stop func(), err error) {
	watches, err = NewInformers(env)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := add(watches); err != nil {
		return nil, nil, nil, err
	}
	if kubelet, err = WatchForKubelet(row, watches, env.ControlPlane.Tessera); err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	stop = func() {
		cancel()
		watches.Shutdown()
		wg.Wait()
	}
	if err := watches.Start(ctx); err != nil {
		stop()
		return nil, nil, nil, err
	}
	kubelet.Start(ctx, &wg)
	return watches, kubelet, stop, nil
}
