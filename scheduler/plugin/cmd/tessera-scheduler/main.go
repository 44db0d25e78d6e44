// Command tessera-scheduler is kube-scheduler v1.37 with Tessera's
// placement compiled in as the framework plugins "Tessera" (package
// plugin, plugin mode) with its fit gate "TesseraFitGate", and "TesseraDRA"
// (package drascore, a score beside DynamicResources in DRA mode) with its
// fit gate "TesseraDRAFitGate" (package plugin). It takes kube-scheduler's
// flags and a KubeSchedulerConfiguration that enables one of them, such as
// deploy/scheduler/tessera-scheduler-config.yaml or
// deploy/scheduler/tessera-scheduler-dra-config.yaml. The fit gates park
// the pods they hold outside kube-scheduler's queue: its pod informer
// keeps them from kube-scheduler's handlers, and hides them until they
// are parked.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // for --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/tessera-gpu/tessera/scheduler/plugin"
	"github.com/tessera-gpu/tessera/scheduler/plugin/drascore"
)

func main() {
	leading := make(chan struct{})
	screen := plugin.NewScreen()
	factories := plugin.NewFactories(&plugin.Parking{Leading: leading, Screen: screen})
	command := newCommand(leading, screen,
		app.WithPlugin(plugin.Name, factories.Tessera),
		app.WithPlugin(plugin.FitGateName, factories.FitGate),
		app.WithPlugin(drascore.Name, drascore.New),
		app.WithPlugin(plugin.DRAFitGateName, factories.DRAFitGate))
	os.Exit(cli.Run(command))
}
