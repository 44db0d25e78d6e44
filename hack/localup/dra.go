package main

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/deviceplugin/dra"
)

// startDRAScheduler starts tessera-scheduler with the shipped
// deploy/scheduler/tessera-scheduler-dra-config.yaml (DynamicResources and
// Tessera's node policy score), or with --scheduler=stock stock
// kube-scheduler, and creates the DeviceClass the examples' claims name,
// as the chart does in DRA mode.
func (c *cluster) startDRAScheduler(ctx context.Context) error {
	if c.o.scheduler == schedulerStock {
		if err := c.startStockScheduler(ctx); err != nil {
			return err
		}
	} else if _, err := c.startTesseraScheduler(ctx, "tessera-scheduler-dra-config.yaml"); err != nil {
		return err
	}
	_, err := c.cp.Kube.ResourceV1().DeviceClasses().Create(ctx, dra.DeviceClass(), metav1.CreateOptions{})
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
