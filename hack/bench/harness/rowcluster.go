package harness

import (
	"context"
	"sync"
)

// RowCluster is a row's fresh control plane with its nodes, the bench's
// informers on it, the simulated kubelet where the row's scheduler writes
// GPUAllocations, and the row's scheduler, prepared but not started.
type RowCluster struct {
	Env     *ClusterEnv
	Watches *Informers
	Kubelet *KubeletSim
	Sched   *RowScheduler
	// stops end what was started, last first; cancel ends the row's context.
	stops  []func()
	cancel context.CancelFunc
}

// StartRowCluster starts the row's cluster: fill creates what the row
// needs before the informers start, and watch registers the row's handlers
// on them. The context it returns ends with Stop, which the caller calls
// once the row is over: everything the row started in the background ends
// before the control plane.
func (r *Runner) StartRowCluster(ctx context.Context, row string, fill func(context.Context, *ClusterEnv) error,
	watch func(*Informers) error) (context.Context, *RowCluster, error) {
	ctx, cancel := context.WithCancel(ctx)
	c := &RowCluster{cancel: cancel}
	env, err := r.StartCluster(ctx, row)
	if err != nil {
		c.Stop()
		return nil, nil, err
	}
	c.Env = env
	c.stops = append(c.stops, env.Stop)
	if err := c.startWatches(ctx, row, fill, watch); err != nil {
		c.Stop()
		return nil, nil, err
	}
	if r.Options.NodeWatches && allocatesGPUs(row) {
		stop, err := StartNodeWatches(ctx, env.ControlPlane.Config, r.Options.Nodes)
		if err != nil {
			c.Stop()
			return nil, nil, err
		}
		c.stops = append(c.stops, stop)
	}
	if c.Sched, err = r.PrepareScheduler(ctx, env, row); err != nil {
		c.Stop()
		return nil, nil, err
	}
	c.stops = append(c.stops, c.Sched.StopExtender)
	return ctx, c, nil
}

// startWatches fills the cluster, then starts the informers, with the
// handlers watch registers first, and the simulated kubelet.
func (c *RowCluster) startWatches(ctx context.Context, row string, fill func(context.Context, *ClusterEnv) error, watch func(*Informers) error) error {
	if err := fill(ctx, c.Env); err != nil {
		return err
	}
	watches, err := NewInformers(c.Env)
	if err != nil {
		return err
	}
	if err := watch(watches); err != nil {
		return err
	}
	if c.Kubelet, err = WatchForKubelet(row, watches, c.Env.ControlPlane.Tessera); err != nil {
		return err
	}
	var wg sync.WaitGroup
	c.stops = append(c.stops, func() {
		c.cancel()
		watches.Shutdown()
		wg.Wait()
	})
	if err := watches.Start(ctx); err != nil {
		return err
	}
	c.Kubelet.Start(ctx, &wg)
	c.Watches = watches
	return nil
}

// Stop stops the row's extender, ends its context and informers and waits
// for its workers, then stops the control plane.
func (c *RowCluster) Stop() {
	for i := len(c.stops) - 1; i >= 0; i-- {
		c.stops[i]()
	}
	c.stops = nil
	c.cancel()
}
