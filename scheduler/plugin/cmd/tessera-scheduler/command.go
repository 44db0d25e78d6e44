package main

import (
	"context"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/cli/globalflag"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/logs"
	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/component-base/term"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerserverconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	kubeschedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/latest"
	"k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"k8s.io/utils/clock"

	"github.com/tessera-gpu/tessera/internal/kubeclient"
	"github.com/tessera-gpu/tessera/scheduler/plugin"
)

// newCommand is kube-scheduler's command, with its flags, built as
// app.NewSchedulerCommand builds it but for its informers and its
// election: the scheduler's pod informer keeps parked and held pods from
// kube-scheduler (see schedulerInformers), every informer waits out a
// restarting kube-apiserver (see setup), and leading closes once it
// leads. app.NewSchedulerCommand builds the informers inside, with no way
// to change them.
func newCommand(leading chan<- struct{}, screen *plugin.Screen, plugins ...app.Option) *cobra.Command {
	opts := options.NewOptions()
	cmd := &cobra.Command{
		Use: "tessera-scheduler",
		Long: `tessera-scheduler is kube-scheduler with Tessera's placement of GPU slices
compiled in. It takes kube-scheduler's flags and a KubeSchedulerConfiguration
that enables Tessera's plugins.`,
		PersistentPreRunE: func(*cobra.Command, []string) error {
			// Feature gates are set before RunE.
			return opts.ComponentGlobalsRegistry.Set()
		},
		RunE: func(cmd *cobra.Command, _ []string) error {
			return run(cmd, opts, leading, screen, plugins...)
		},
		Args: cobra.NoArgs,
	}
	nfs := opts.Flags
	verflag.AddFlags(nfs.FlagSet("global"))
	globalflag.AddGlobalFlags(nfs.FlagSet("global"), cmd.Name(), logs.SkipLoggingConfigurationFlags())
	fs := cmd.Flags()
	for _, f := range nfs.FlagSets {
		fs.AddFlagSet(f)
	}
	cols, _, _ := term.TerminalSize(cmd.OutOrStdout())
	cliflag.SetUsageAndHelpFunc(cmd, *nfs, cols)
	return cmd
}

// run runs the scheduler until a signal ends it.
func run(cmd *cobra.Command, opts *options.Options, leading chan<- struct{}, screen *plugin.Screen, plugins ...app.Option) error {
	verflag.PrintAndExitIfRequested()
	fg := opts.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	if err := logsapi.ValidateAndApply(opts.Logs, fg); err != nil {
		fmt.Fprintf(os.Stderr, "%v\n", err)
		os.Exit(1)
	}
	cliflag.PrintFlags(cmd.Flags())
	if opts.InformerName == nil {
		name, err := cache.NewInformerName("kube-scheduler")
		if err != nil {
			return err
		}
		opts.InformerName = name
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-server.SetupSignalHandler()
		cancel()
	}()
	cc, sched, err := setup(ctx, opts, leading, screen, plugins...)
	if err != nil {
		return err
	}
	fg.(featuregate.MutableFeatureGate).AddMetrics()
	opts.ComponentGlobalsRegistry.AddMetrics()
	return app.Run(ctx, cc, sched)
}

// setup is app.Setup with the scheduler's informers leaving parked pods
// out and screened and waiting out kube-apiserver's restarts, and its
// leader election closing leading.
func setup(ctx context.Context, opts *options.Options, leading chan<- struct{}, screen *plugin.Screen, plugins ...app.Option) (*schedulerserverconfig.CompletedConfig, *scheduler.Scheduler, error) {
	cfg, err := latest.Default()
	if err != nil {
		return nil, nil, err
	}
	opts.ComponentConfig = cfg
	if errs := opts.Validate(); len(errs) > 0 {
		return nil, nil, utilerrors.NewAggregate(errs)
	}
	c, err := opts.Config(ctx)
	if err != nil {
		return nil, nil, err
	}
	// The informers wait out a restarting kube-apiserver, as Tessera's
	// other clients do, rather than back off for up to a minute: the
	// plugins' view of GPUs reads the pods from this factory, and would
	// keep the GPUs of pods deleted meanwhile.
	informerClient, err := kubernetes.NewForConfig(rest.AddUserAgent(kubeclient.WaitForRestarts(c.KubeConfig, clock.RealClock{}), "scheduler"))
	if err != nil {
		return nil, nil, err
	}
	c.InformerFactory = schedulerInformers(informerClient, opts.InformerName, screen)
	if c.LeaderElection != nil {
		c.LeaderElection.Lock = &leaderLock{Interface: c.LeaderElection.Lock, leading: leading}
	} else {
		close(leading)
	}
	cc := c.Complete()
	registry := runtime.Registry{}
	for _, plugin := range plugins {
		if err := plugin(registry); err != nil {
			return nil, nil, err
		}
	}
	var profiles []kubeschedulerconfig.KubeSchedulerProfile
	sched, err := scheduler.New(ctx,
		cc.Client,
		cc.InformerFactory,
		cc.DynInformerFactory,
		func(name string) events.EventRecorderLogger { return cc.EventBroadcaster.NewRecorder(name) },
		scheduler.WithComponentConfigVersion(cc.ComponentConfig.TypeMeta.APIVersion),
		scheduler.WithKubeConfig(cc.KubeConfig),
		scheduler.WithProfiles(cc.ComponentConfig.Profiles...),
		scheduler.WithPercentageOfNodesToScore(cc.ComponentConfig.PercentageOfNodesToScore),
		scheduler.WithFrameworkOutOfTreeRegistry(registry),
		scheduler.WithPodMaxBackoffSeconds(cc.ComponentConfig.PodMaxBackoffSeconds),
		scheduler.WithPodInitialBackoffSeconds(cc.ComponentConfig.PodInitialBackoffSeconds),
		scheduler.WithPodMaxInUnschedulablePodsDuration(cc.PodMaxInUnschedulablePodsDuration),
		scheduler.WithExtenders(cc.ComponentConfig.Extenders...),
		scheduler.WithParallelism(cc.ComponentConfig.Parallelism),
		scheduler.WithBuildFrameworkCapturer(func(p kubeschedulerconfig.KubeSchedulerProfile) {
			profiles = append(profiles, p)
		}),
	)
	if err != nil {
		return nil, nil, err
	}
	if err := options.LogOrWriteConfig(klog.FromContext(ctx), opts.WriteConfigTo, &cc.ComponentConfig, profiles); err != nil {
		return nil, nil, err
	}
	return &cc, sched, nil
}
