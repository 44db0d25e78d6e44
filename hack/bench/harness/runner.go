// Package harness is what every mode of the bench shares: the flags, a
// control plane on loopback with simulated GPU nodes, the schedulers each
// row runs, the pods and their placements, CPU pinning, CPU, memory and
// request accounting, percentiles, and the grid the tables print in.
package harness

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tessera-gpu/tessera/deviceplugin/dra"
	"github.com/tessera-gpu/tessera/test/framework"
)

// RowName says what each row runs.
func RowName(row string) string {
	switch row {
	case RowKubeScheduler:
		return "kube-scheduler alone"
	case RowNoop:
		return "kube-scheduler + no-op extender"
	case RowTessera:
		return "kube-scheduler + Tessera's extender"
	case RowFitGate:
		return "kube-scheduler + Tessera's extender, fit gate on"
	case RowPlugin:
		return "tessera-scheduler (plugin mode)"
	default:
		return "kube-scheduler alone, DRA claims on Tessera's slices"
	}
}

// Name says what the row runs in this run: RowName, but for row e with
// --dra-config.
func (r *Runner) Name(row string) string {
	if row == RowDRA && r.DRAConfig.YAML != "" {
		return "tessera-scheduler, DRA claims on Tessera's slices (" + filepath.Base(r.Options.DRAConfig) + ")"
	}
	return RowName(row)
}

// HasExtender reports whether the row runs an extender, whose API
// requests the audit log counts.
func HasExtender(row string) bool { return row == RowNoop || row == RowTessera || row == RowFitGate }

// allocatesGPUs reports whether the row writes GPUAllocations, which the
// simulated kubelet completes.
func allocatesGPUs(row string) bool {
	return row == RowTessera || row == RowFitGate || row == RowPlugin
}

// Runner runs the rows of the throughput table.
type Runner struct {
	Options *Options
	// Base holds one directory per row.
	Base string
	// ExtenderConfig is the KubeSchedulerConfiguration of rows b and c.
	ExtenderConfig SchedulerConfig
	// ExtenderBin is Tessera's extender, for row c.
	ExtenderBin string
	// PluginConfig and schedulerBin are tessera-scheduler's configuration
	// and binary, for row d.
	PluginConfig SchedulerConfig
	SchedulerBin string
	// DRAConfig is tessera-scheduler's configuration for row e; without
	// YAML row e runs stock kube-scheduler.
	DRAConfig SchedulerConfig
	// Pin, if set, puts the control plane on a CPU of its own.
	Pin *Pinning
}

// StartCluster starts a fresh control plane for the row, its processes
// pinned if asked to, with the row's nodes (and in DRA mode Tessera's
// DeviceClass); in gangs mode with Kubernetes' Workload API on. The
// caller stops it.
func (r *Runner) StartCluster(ctx context.Context, row string) (*ClusterEnv, error) {
	opts := framework.Options{Dir: filepath.Join(r.Base, "row-"+row), Gangs: r.Options.Mode == ModeGangs, APIServerEnv: r.Options.APIServerEnv}
	env, err := StartEnvWith(ctx, opts, r.ExtenderConfig.SchedulerName)
	if err != nil {
		return nil, err
	}
	env.FitGate = row == RowFitGate
	if err := r.setUpCluster(ctx, env, row); err != nil {
		env.Stop()
		return nil, err
	}
	return env, nil
}

func (r *Runner) setUpCluster(ctx context.Context, env *ClusterEnv, row string) error {
	if err := r.PinRow(env); err != nil {
		return err
	}
	form := RowForm(row)
	if form == FormClaim {
		if _, err := env.ControlPlane.Kube.ResourceV1().DeviceClasses().Create(ctx, dra.DeviceClass(), metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
			return fmt.Errorf("creating the DeviceClass: %w", err)
		}
	}
	return CreateNodes(ctx, env, r.Options, form)
}

// PinRow puts the row's processes on their CPUs, if asked to.
func (r *Runner) PinRow(env *ClusterEnv) error {
	if r.Pin == nil {
		return nil
	}
	n, err := r.Pin.pinRow(env.Dir)
	if err != nil {
		return err
	}
	if n < 2 {
		return fmt.Errorf("pinning the control plane in %s: found %d of its processes, want etcd and kube-apiserver at least", env.Dir, n)
	}
	return nil
}

// WaitAllBound waits until every pod is bound, the timeout passes, ctx
// ends, or check, called every second, reports a failure.
func WaitAllBound(ctx context.Context, binds *BindRecorder, timeout time.Duration, check func() error) error {
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
