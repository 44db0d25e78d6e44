package main

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rowNames say what each row runs.
func rowName(row string) string {
	switch row {
	case rowKubeScheduler:
		return "kube-scheduler alone"
	case rowNoop:
		return "kube-scheduler + no-op extender"
	case rowTessera:
		return "kube-scheduler + Tessera's extender"
	case rowPlugin:
		return "tessera-scheduler (plugin mode)"
	default:
		return "kube-scheduler alone, DRA claims on Tessera's slices"
	}
}

// hasExtender reports whether the row runs an extender, whose API
// requests the audit log counts.
func hasExtender(row string) bool { return row == rowNoop || row == rowTessera }

// allocatesGPUs reports whether the row writes GPUAllocations, which the
// simulated kubelet completes.
func allocatesGPUs(row string) bool { return row == rowTessera || row == rowPlugin }

// runner runs the rows of the throughput table.
type runner struct {
	o *Options
	// base holds one directory per row.
	base string
	// extenderConfig is the KubeSchedulerConfiguration of rows b and c.
	extenderConfig schedulerConfig
	// extenderBin is Tessera's extender, for row c.
	extenderBin string
	// pluginConfig and schedulerBin are tessera-scheduler's configuration
	// and binary, for row d.
	pluginConfig schedulerConfig
	schedulerBin string
	// pin, if set, puts the control plane on a CPU of its own.
	pin *pinning
}

// startCluster starts a fresh control plane for the row, its processes
// pinned if asked to, with the row's nodes (and in DRA mode Tessera's
// DeviceClass). The caller stops it.
func (r *runner) startCluster(ctx context.Context, row string) (*clusterEnv, error) {
	env, err := startEnv(ctx, filepath.Join(r.base, "row-"+row), r.extenderConfig.SchedulerName)
	if err != nil {
		return nil, err
	}
	if err := r.setUpCluster(ctx, env, row); err != nil {
		env.stop()
		return nil, err
	}
	return env, nil
}

func (r *runner) setUpCluster(ctx context.Context, env *clusterEnv, row string) error {
	if err := r.pinRow(env); err != nil {
		return err
	}
	form := rowForm(row)
	if form == formClaim {
		if _, err := env.cp.Kube.ResourceV1().DeviceClasses().Create(ctx, dra.DeviceClass(), metav1.CreateOptions{FieldManager: fieldManager}); err != nil {
			return fmt.Errorf("creating the DeviceClass: %w", err)
		}
	}
	return createNodes(ctx, env, r.o, form)
}

// pinRow puts the row's processes on their CPUs, if asked to.
func (r *runner) pinRow(env *clusterEnv) error {
	if r.pin == nil {
		return nil
	}
	n, err := r.pin.pinRow(env.dir)
	if err != nil {
		return err
	}
	if n < 2 {
		return fmt.Errorf("pinning the control plane in %s: found %d of its processes, want etcd and kube-apiserver at least", env.dir, n)
	}
	return nil
}

// waitAllBound waits until every pod is bound, the timeout passes, ctx
// ends, or check, called every second, reports a failure.
func waitAllBound(ctx context.Context, binds *bindRecorder, timeout time.Duration, check func() error) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-binds.allBound():
			return nil
		case <-deadline.C:
			return fmt.Errorf("--timeout=%s passed", timeout)
		case <-ctx.Done():
			return context.Cause(ctx)
		case <-tick.C:
			if err := check(); err != nil {
				return err
			}
		}
	}
}
