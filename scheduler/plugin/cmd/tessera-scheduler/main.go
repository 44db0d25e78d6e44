// Command tessera-scheduler is kube-scheduler v1.37 with Tessera's
// placement compiled in as the framework plugin "Tessera" (package plugin).
// It takes kube-scheduler's flags and a KubeSchedulerConfiguration that
// enables the plugin, such as deploy/scheduler/tessera-scheduler-config.yaml.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register" // for --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	_ "k8s.io/component-base/metrics/prometheus/version"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"

	"github.com/tessera-gpu/tessera/scheduler/plugin"
)

func main() {
	command := app.NewSchedulerCommand(app.WithPlugin(plugin.Name, plugin.NewFactory()))
	os.Exit(cli.Run(command))
}
