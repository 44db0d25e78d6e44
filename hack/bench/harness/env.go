package harness

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/test/framework"
)

// ClusterEnv is one fresh control plane and what the bench knows of it.
type ClusterEnv struct {
	ControlPlane *framework.ControlPlane
	// Dir holds the control plane's data and logs.
	Dir string
	// SchedulerName is the profile the pods ask for.
	SchedulerName string
	// AuditLog records the extender user's requests.
	AuditLog string
	// ExtenderKubeconfig and extenderConfig are the extender user's.
	ExtenderKubeconfig string
	extenderConfig     *rest.Config
	// FitGate has CreatePods create the pods with the scheduling gate
	// gpu.tessera.dev/fit, as the webhook creates them for an extender
	// with its fit gate on (row f).
	FitGate bool
}

// StartEnv starts a control plane in dir, with an audit log of the
// extender user's requests and a namespace for the workload. On error the
// control plane, if started, is stopped.
func StartEnv(ctx context.Context, dir, schedulerName string) (*ClusterEnv, error) {
	return StartEnvWith(ctx, framework.Options{Dir: dir}, schedulerName)
}

// StartEnvWith is startEnv with the control plane's options, such as
// the controllers queue mode needs; opts.Dir must be set.
func StartEnvWith(ctx context.Context, opts framework.Options, schedulerName string) (*ClusterEnv, error) {
	dir := opts.Dir
	flags, auditLog, err := meter.AuditFlags(dir)
	if err != nil {
		return nil, err
	}
	opts.APIServerFlags = append(opts.APIServerFlags, flags...)
	cp, err := framework.StartControlPlane(ctx, opts)
	if err != nil {
		if cp != nil {
			cp.Stop()
		}
		return nil, fmt.Errorf("starting the control plane in %s: %w", dir, err)
	}
	env := &ClusterEnv{ControlPlane: cp, Dir: dir, SchedulerName: schedulerName, AuditLog: auditLog}
	env.ExtenderKubeconfig, env.extenderConfig, err = cp.NewUserKubeconfig(meter.ExtenderUser, []string{"system:masters"})
	if err != nil {
		cp.Stop()
		return nil, fmt.Errorf("creating the extender's identity: %w", err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{FieldManager: FieldManager}); err != nil {
		cp.Stop()
		return nil, fmt.Errorf("creating namespace %s: %w", Namespace, err)
	}
	klog.FromContext(ctx).Info("Started the control plane", "dir", dir, "kubeconfig", cp.KubeconfigPath)
	return env, nil
}

// Stop ends every process of the control plane.
func (e *ClusterEnv) Stop() { e.ControlPlane.Stop() }
