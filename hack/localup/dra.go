package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
)

// stockSchedulerConfig is kube-scheduler's default configuration: its
// DynamicResources plugin allocates the claims, with no extender.
const stockSchedulerConfig = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
`

// startDRAScheduler starts stock kube-scheduler and creates the DeviceClass
// the examples' claims name, as the chart does in DRA mode.
func (c *cluster) startDRAScheduler(ctx context.Context) error {
	p, err := c.cp.StartSchedulerProcess(stockSchedulerConfig)
	if err != nil {
		return err
	}
	c.daemons = append(c.daemons, p)
	_, err = c.cp.Kube.ResourceV1().DeviceClasses().Create(ctx, dra.DeviceClass(), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the DeviceClass %s: %w", gpuv1alpha1.DRADriverName, err)
	}
	return nil
}

// daemonKind names what serves each node's kubelet.
func (c *cluster) daemonKind() string {
	if c.o.dra() {
		return "node daemon as DRA driver " + gpuv1alpha1.DRADriverName
	}
	return "device plugin"
}
