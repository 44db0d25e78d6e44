package harness

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// Row names, the values of --rows.
const (
	RowKubeScheduler = "a"
	RowNoop          = "b"
	RowTessera       = "c"
	RowPlugin        = "d"
	RowDRA           = "e"
	// RowFitGate is row c with the extender's fit gate on and the waiting
	// pods created gated, as the webhook creates them: backlog mode only.
	RowFitGate = "f"
)

// AllRows are the rows of the throughput table, in its order.
func AllRows() []string {
	return []string{RowKubeScheduler, RowNoop, RowTessera, RowPlugin, RowDRA}
}

// Modes, the values of --mode.
const (
	modeThroughput = "throughput"
	ModeScale      = "scale"
	ModeWrites     = "writes"
	ModeBacklog    = "backlog"
)

// Limits of the flags: a loopback control plane on one machine holds at
// most this many objects in reasonable time.
const (
	maxNodes       = 20000
	maxGPUsPerNode = 16
	maxSplit       = 100
	maxPods        = 200000
	maxProbes      = 100000
	// maxFinishRate is the most pods a second backlog mode ends.
	maxFinishRate = 1000
)

// Options are everything the bench's command line sets.
type Options struct {
	// Mode is throughput (rows a to e), scale (the extender's memory and
	// filter latency with many pods already placed), writes (what each
	// write of a pod's scheduling costs the control plane) or backlog
	// (rows c, d, e with a full cluster, pods waiting and pods ending),
	// queue (Jobs through Kueue without and with gang-fit admission) or
	// gangs (PodGroups of GPU slices placed by tessera-scheduler).
	Mode string
	// Nodes, GPUsPerNode and Split size the cluster: every GPU is shared by
	// at most Split containers, and a Node's allocatable nvidia.com/gpu is
	// GPUsPerNode × Split, as HAMi's device plugin reports it.
	Nodes       int
	GPUsPerNode int
	Split       int
	// Pods is how many pods are scheduled (throughput) or already placed (scale).
	Pods int
	// OneShape gives every pod of the throughput rows the mix's first
	// shape, as the pods of one Job ask for the same.
	OneShape bool
	// Rows picks the rows of the throughput table, a subset of "a,b,c,d,e",
	// or of backlog mode, a subset of "c,d,e" (all three by default).
	Rows []string
	// FinishRate is how many running pods end each second in backlog mode.
	FinishRate float64
	// BacklogDuration is how long pods end in backlog mode.
	BacklogDuration time.Duration
	// BacklogWarmup bounds backlog mode's wait, before pods start to end,
	// for the scheduler to have tried every waiting pod once.
	BacklogWarmup time.Duration
	// BacklogRestart restarts the scheduler after the warm-up, once its
	// queue has let go of the pods it holds, before pods start to end.
	BacklogRestart bool
	// NodeWatches opens, in the rows whose scheduler writes GPUAllocations,
	// the watches every node's daemon keeps in device-plugin mode.
	NodeWatches bool
	// PinControlPlane runs etcd, kube-apiserver and kube-controller-manager
	// on CPU 0 and everything else (kube-scheduler, the extender, the
	// bench) on the other CPUs, as if the control plane had its own machine.
	PinControlPlane bool
	// SchedulerBin is a prebuilt tessera-scheduler for row d; empty asks
	// hack/build-scheduler.sh (or $TESSERA_SCHEDULER_BIN).
	SchedulerBin string
	// PluginConfig is the KubeSchedulerConfiguration of row d.
	PluginConfig string
	// DRAConfig, when set, is a KubeSchedulerConfiguration of
	// tessera-scheduler that row e runs instead of stock kube-scheduler.
	DRAConfig string
	// ExtenderBin is a prebuilt extender binary; empty builds ./scheduler.
	ExtenderBin string
	// ExtenderArgs are extra flags for the extender.
	ExtenderArgs []string
	// ExtenderEnv are extra environment variables (KEY=VALUE) for the
	// extender, such as GOMEMLIMIT.
	ExtenderEnv []string
	// APIServerEnv are extra environment variables (KEY=VALUE) for
	// kube-apiserver, such as GOGC, in the modes whose rows each start a
	// control plane (throughput, backlog, gangs).
	APIServerEnv []string
	// SchedulerConfig is the KubeSchedulerConfiguration rows b and c start
	// from; its extender urlPrefix is rewritten.
	SchedulerConfig string
	// Out is a file for the table in Markdown; empty for none.
	Out string
	// Dir keeps each control plane's logs and data; empty uses a temporary
	// directory that is removed at the end.
	Dir string
	// Timeout bounds one row, from the scheduler's start to the last bind.
	Timeout time.Duration
	// ProfileSeconds, when positive, takes CPU profiles of kube-apiserver
	// and the extender, and a trace of the extender, for that long from
	// kube-scheduler's start, into Dir.
	ProfileSeconds int
	// Probes is how many filter calls the scale mode sends for its probe pod.
	Probes int
	// Workers is how many requests run at once while the bench creates objects.
	Workers int
	// HeartbeatPeriod is how often each node's simulated device plugin
	// heartbeats in scale mode's steady state; 0 leaves it out.
	HeartbeatPeriod time.Duration
	// SteadyWindow is how long scale mode measures that steady state.
	SteadyWindow time.Duration
	// NewPods is how many DRA pods scale mode with row e schedules once
	// kube-scheduler is ready, onto the room the placed pods left.
	NewPods int
	// ClaimChurn is how many ResourceClaims a second scale mode with row e
	// creates and deletes while it measures the node daemons' steady state.
	ClaimChurn float64
	// PodIdentification is what every simulated node's GPUNode says of
	// how its device plugin learns which pod the kubelet allocates for:
	// with PodResources the scheduler binds GPU pods to a node without
	// waiting for the one before to be served.
	PodIdentification gpuv1alpha1.PodIdentification
	// Queue are queue mode's flags.
	Queue QueueOptions
	// Gangs are gangs mode's flags.
	Gangs GangOptions
	// Logs configures logging (-v, --logging-format).
	Logs *logsapi.LoggingConfiguration
}

// NewOptions returns the defaults, sized for a 2-core machine.
func NewOptions() *Options {
	return &Options{
		Mode:              modeThroughput,
		Nodes:             1000,
		GPUsPerNode:       8,
		Split:             10,
		Pods:              5000,
		Rows:              AllRows(),
		SchedulerConfig:   "deploy/scheduler/kube-scheduler-config.yaml",
		PluginConfig:      "deploy/scheduler/tessera-scheduler-config.yaml",
		Timeout:           20 * time.Minute,
		Probes:            300,
		Workers:           32,
		HeartbeatPeriod:   15 * time.Second,
		SteadyWindow:      time.Minute,
		NewPods:           200,
		ClaimChurn:        50,
		PodIdentification: gpuv1alpha1.PodIdentificationPodResources,
		Queue:             defaultQueueOptions(),
		Gangs:             defaultGangOptions(),
		FinishRate:        50,
		BacklogDuration:   time.Minute,
		BacklogWarmup:     3 * time.Minute,
		Logs:              logsapi.NewLoggingConfiguration(),
	}
}

// Mix is the throughput rows' workload: the default mix, or its first
// shape alone with --one-shape.
func (o *Options) Mix() Mix {
	if o.OneShape {
		return DefaultMix()[:1]
	}
	return DefaultMix()
}

// AddFlags registers the flags on fs.
func (o *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Mode, "mode", o.Mode, "throughput: rows a (kube-scheduler alone), b (no-op extender), c (Tessera's extender), d (tessera-scheduler, plugin mode), e (DRA: kube-scheduler alone over Tessera's ResourceSlices) on one workload; scale: the extender's memory and filter latency with --pods already placed on --nodes; writes: the control plane's CPU per write of a pod's scheduling (pod, binding, GPUAllocation and its status), --pods of each; backlog: rows c, d, e on a cluster filled by the bench with 3 times as many pods waiting, --finish-rate pods ending each second for --backlog-duration (--pods is not used); queue: --jobs Jobs of --pods-per-job pods of GPU slices through Kueue onto a cluster fragmented by earlier pods, without and with Tessera's gang-fit admission check (--pods is not used); gangs: --pods GPU slices in gangs of each of --gang-sizes, each gang a PodGroup, placed by tessera-scheduler (row d) with the Workload API on, and the same pods without a PodGroup.")
	fs.IntVar(&o.Nodes, "nodes", o.Nodes, fmt.Sprintf("Simulated GPU nodes (1 to %d).", maxNodes))
	fs.IntVar(&o.GPUsPerNode, "gpus-per-node", o.GPUsPerNode, fmt.Sprintf("GPUs on every node (4 to %d; the workload has 4-GPU pods).", maxGPUsPerNode))
	fs.IntVar(&o.Split, "split", o.Split, fmt.Sprintf("Containers that may share one GPU (1 to %d); the Node's allocatable nvidia.com/gpu is GPUs × split.", maxSplit))
	fs.IntVar(&o.Pods, "pods", o.Pods, fmt.Sprintf("Pods to schedule (throughput) or to place before the extender starts (scale) (1 to %d).", maxPods))
	fs.BoolVar(&o.OneShape, "one-shape", o.OneShape, "Throughput mode: every pod asks for the mix's first shape (1 GPU, 8 GiB), as the pods of one Job do, instead of the mix.")
	fs.StringSliceVar(&o.Rows, "rows", o.Rows, "Rows of the throughput table: a (kube-scheduler alone), b (no-op extender), c (Tessera's extender), d (tessera-scheduler, plugin mode), e (DRA mode); in backlog mode a subset of c, d, e, all three by default; in scale mode e alone measures DRA mode (kube-scheduler with --pods claims allocated, and the node daemons' steady state), anything else the extender.")
	fs.Float64Var(&o.FinishRate, "finish-rate", o.FinishRate, fmt.Sprintf("Backlog mode: running pods ended each second, each picked at random (above 0, at most %d).", maxFinishRate))
	fs.DurationVar(&o.BacklogDuration, "backlog-duration", o.BacklogDuration, "Backlog mode: how long pods end after the warm-up; binds are watched 10s longer.")
	fs.BoolVar(&o.BacklogRestart, "backlog-restart", o.BacklogRestart, "Backlog mode: after the warm-up, wait (up to --backlog-warmup) until kube-scheduler's queue holds at most 1% of the waiting pods gated and at most 1% wait unparked (or none was parked for 10 s), restart the scheduler as a new leader would start, and wait for it to try every waiting pod once before pods start to end.")
	fs.DurationVar(&o.BacklogWarmup, "backlog-warmup", o.BacklogWarmup, "Backlog mode: the longest wait after the scheduler starts for it to have tried every waiting pod once (its active and backoff queues empty) before pods start to end.")
	fs.BoolVar(&o.NodeWatches, "node-watches", o.NodeWatches, "In rows c, d and f, open for every node the watches its device-plugin daemon keeps (its pods and GPUNode, by field selector) and its reads of its GPU pods' GPUAllocations by name, as a cluster's daemons do.")
	fs.BoolVar(&o.PinControlPlane, "pin-control-plane", o.PinControlPlane, "Run etcd, kube-apiserver and kube-controller-manager on CPU 0 and kube-scheduler, the extender and the bench on the other CPUs (sched_setaffinity), as if the control plane had a machine of its own; needs at least 2 CPUs.")
	fs.StringVar(&o.SchedulerBin, "scheduler-bin", o.SchedulerBin, "Prebuilt tessera-scheduler for row d; empty uses $TESSERA_SCHEDULER_BIN or builds it with hack/build-scheduler.sh.")
	fs.StringVar(&o.PluginConfig, "plugin-config", o.PluginConfig, "KubeSchedulerConfiguration for row d, relative to the repository root; its Tessera args get heartbeatMaxAge 24h.")
	fs.StringVar(&o.DRAConfig, "dra-config", o.DRAConfig, "KubeSchedulerConfiguration, relative to the repository root, with which row e runs tessera-scheduler (its one profile renamed to the bench's scheduler name) instead of stock kube-scheduler, such as deploy/scheduler/tessera-scheduler-dra-config.yaml; empty runs kube-scheduler alone.")
	fs.StringVar(&o.ExtenderBin, "extender-bin", o.ExtenderBin, "Prebuilt extender binary; empty builds ./scheduler into a temporary directory.")
	fs.StringArrayVar(&o.ExtenderArgs, "extender-arg", o.ExtenderArgs, "Extra flag for the extender, such as --extender-arg=--kube-api-qps=1000; repeatable.")
	fs.StringArrayVar(&o.ExtenderEnv, "extender-env", o.ExtenderEnv, "Extra environment variable KEY=VALUE for the extender, such as --extender-env=GOMEMLIMIT=350MiB; repeatable.")
	fs.StringArrayVar(&o.APIServerEnv, "apiserver-env", o.APIServerEnv, "Extra environment variable KEY=VALUE for kube-apiserver in the throughput, backlog and gangs modes, such as --apiserver-env=GOGC=400; repeatable.")
	fs.StringVar(&o.SchedulerConfig, "scheduler-config", o.SchedulerConfig, "KubeSchedulerConfiguration for rows b and c, relative to the repository root; its extender urlPrefix is rewritten. A built-in equivalent is used when the file does not exist.")
	fs.StringVar((*string)(&o.PodIdentification), "pod-identification", string(o.PodIdentification), "What every simulated node's GPUNode says of how its device plugin learns which pod the kubelet allocates for: PodResources (the chart's default: the scheduler binds GPU pods to a node without waiting for each other) or InFlight (one GPU pod in flight per node).")
	fs.StringVar(&o.Out, "out", o.Out, "Also write the table in Markdown to this file.")
	fs.StringVar(&o.Dir, "dir", o.Dir, "Keep every control plane's data and logs under this directory; empty uses a temporary one, removed at the end.")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "Longest one row may take from the scheduler's start to the last bind.")
	fs.IntVar(&o.ProfileSeconds, "profile-seconds", o.ProfileSeconds, "Take CPU profiles of kube-apiserver and the extender, and an execution trace of the extender, for this many seconds, into each row's directory under --dir (which it needs): from the scheduler's start in the throughput rows, from the first probe in scale mode, from the first pod ended in backlog mode; in the throughput and backlog modes also of the scheduler; 0 for none.")
	fs.IntVar(&o.Probes, "probes", o.Probes, fmt.Sprintf("Filter calls for the probe pod in scale mode (1 to %d).", maxProbes))
	fs.IntVar(&o.Workers, "workers", o.Workers, "Requests in flight while the bench creates nodes, pods and allocations (1 to 256).")
	fs.DurationVar(&o.HeartbeatPeriod, "heartbeat-period", o.HeartbeatPeriod, "Scale mode: after the probes, every node's device plugin heartbeats at this period (the device plugin's default), and the steady state's CPU is measured; 0 skips it.")
	fs.DurationVar(&o.SteadyWindow, "steady-window", o.SteadyWindow, "Scale mode: how long the heartbeats' steady state is measured, once every node has beaten; with --rows=e each of its four windows.")
	fs.IntVar(&o.NewPods, "new-pods", o.NewPods, fmt.Sprintf("Scale mode with --rows=e: DRA pods scheduled by kube-scheduler once it is ready, onto the room the --pods placed left (1 to %d).", maxPods))
	fs.Float64Var(&o.ClaimChurn, "claim-churn", o.ClaimChurn, fmt.Sprintf("Scale mode with --rows=e: ResourceClaims created and deleted a second while the node daemons' steady state is measured (above 0, at most %d).", maxFinishRate))
	o.Queue.addFlags(fs)
	o.Gangs.addFlags(fs)
	logsapi.AddFlags(o.Logs, fs)
}

// Complete sets what depends on other flags: backlog mode runs rows c,
// d and e unless --rows says otherwise, scale mode the extender (row c).
func (o *Options) Complete(fs *pflag.FlagSet) {
	o.Queue.complete(o, fs)
	o.Gangs.complete(o, fs)
	if fs.Changed("rows") || o.Mode == ModeQueue || o.Mode == ModeGangs {
		return
	}
	switch o.Mode {
	case ModeBacklog:
		o.Rows = AllBacklogRows()
	case ModeScale:
		o.Rows = []string{RowTessera}
	}
}

// Validate reports the first flag out of its range, naming the flag and the limit.
func (o *Options) Validate() error {
	if !slices.Contains([]string{modeThroughput, ModeScale, ModeWrites, ModeBacklog, ModeQueue, ModeGangs}, o.Mode) {
		return fmt.Errorf("--mode=%q: must be %s, %s, %s, %s, %s or %s", o.Mode, modeThroughput, ModeScale, ModeWrites, ModeBacklog, ModeQueue, ModeGangs)
	}
	for _, c := range []struct {
		flag     string
		value    int
		min, max int
	}{
		{"--nodes", o.Nodes, 1, maxNodes},
		{"--gpus-per-node", o.GPUsPerNode, 4, maxGPUsPerNode},
		{"--split", o.Split, 1, maxSplit},
		{"--pods", o.Pods, 1, maxPods},
		{"--probes", o.Probes, 1, maxProbes},
		{"--workers", o.Workers, 1, 256},
	} {
		if c.value < c.min || c.value > c.max {
			return fmt.Errorf("%s=%d: must be from %d to %d", c.flag, c.value, c.min, c.max)
		}
	}
	for _, env := range []struct {
		flag string
		kvs  []string
	}{{"--extender-env", o.ExtenderEnv}, {"--apiserver-env", o.APIServerEnv}} {
		for _, kv := range env.kvs {
			if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
				return fmt.Errorf("%s=%q: must be KEY=VALUE", env.flag, kv)
			}
		}
	}
	if o.ProfileSeconds < 0 || o.ProfileSeconds > 0 && o.Dir == "" {
		return fmt.Errorf("--profile-seconds=%d: must be 0, or positive with --dir to keep the profiles in", o.ProfileSeconds)
	}
	if o.PodIdentification != gpuv1alpha1.PodIdentificationPodResources && o.PodIdentification != gpuv1alpha1.PodIdentificationInFlight {
		return fmt.Errorf("--pod-identification=%s: must be %s or %s", o.PodIdentification, gpuv1alpha1.PodIdentificationPodResources, gpuv1alpha1.PodIdentificationInFlight)
	}
	if o.HeartbeatPeriod < 0 || o.HeartbeatPeriod > 0 && o.HeartbeatPeriod < time.Second {
		return fmt.Errorf("--heartbeat-period=%s: must be 0 or at least 1s", o.HeartbeatPeriod)
	}
	if o.HeartbeatPeriod > 0 && o.SteadyWindow < time.Second {
		return fmt.Errorf("--steady-window=%s: must be at least 1s", o.SteadyWindow)
	}
	if o.Timeout <= 0 {
		return fmt.Errorf("--timeout=%s: must be positive", o.Timeout)
	}
	if err := o.validateRows(); err != nil {
		return err
	}
	if o.Mode == ModeBacklog {
		if err := o.validateBacklog(); err != nil {
			return err
		}
	}
	if o.Mode == ModeScale {
		if err := o.validateScale(); err != nil {
			return err
		}
	}
	if o.Mode == ModeQueue {
		if err := o.Queue.validate(); err != nil {
			return err
		}
	}
	if o.Mode == ModeGangs {
		if err := o.Gangs.validate(o.Pods); err != nil {
			return err
		}
	}
	if o.PinControlPlane && meter.NumCPU() < 2 {
		return fmt.Errorf("--pin-control-plane: needs at least 2 CPUs, the bench may use %d", meter.NumCPU())
	}
	if capacity := o.Nodes * o.GPUsPerNode; o.Mode != ModeBacklog && o.Mode != ModeQueue && o.Pods > capacity*o.Split {
		return fmt.Errorf("--pods=%d: must be at most --nodes × --gpus-per-node × --split = %d, the cluster's share capacity", o.Pods, capacity*o.Split)
	}
	return nil
}

// validateRows checks that --rows names known rows, each once, and row f
// in backlog mode only.
func (o *Options) validateRows() error {
	if len(o.Rows) == 0 {
		return fmt.Errorf("--rows is empty: name at least one of a, b, c, d, e")
	}
	seen := map[string]bool{}
	for _, r := range o.Rows {
		if !slices.Contains(AllRows(), r) && r != RowFitGate {
			return fmt.Errorf("--rows=%s: unknown row %q, want a subset of a,b,c,d,e", strings.Join(o.Rows, ","), r)
		}
		if r == RowFitGate && o.Mode != ModeBacklog {
			return fmt.Errorf("--rows=%s: row f runs in backlog mode only", strings.Join(o.Rows, ","))
		}
		if seen[r] {
			return fmt.Errorf("--rows=%s: row %q is named twice", strings.Join(o.Rows, ","), r)
		}
		seen[r] = true
	}
	return nil
}

// validateBacklog checks backlog mode's flags.
func (o *Options) validateBacklog() error {
	for _, r := range o.Rows {
		if !slices.Contains(AllBacklogRows(), r) {
			return fmt.Errorf("--rows=%s: backlog mode runs rows c, d, e and f only, not %q", strings.Join(o.Rows, ","), r)
		}
	}
	if !(o.FinishRate > 0 && o.FinishRate <= maxFinishRate) {
		return fmt.Errorf("--finish-rate=%g: must be above 0 and at most %d", o.FinishRate, maxFinishRate)
	}
	if o.BacklogDuration < time.Second {
		return fmt.Errorf("--backlog-duration=%s: must be at least 1s", o.BacklogDuration)
	}
	if o.BacklogWarmup < time.Second {
		return fmt.Errorf("--backlog-warmup=%s: must be at least 1s", o.BacklogWarmup)
	}
	return nil
}

// validateScale checks scale mode's flags for DRA mode (--rows=e); any
// other rows measure the extender.
func (o *Options) validateScale() error {
	if !o.ScaleDRA() {
		return nil
	}
	if o.NewPods < 1 || o.NewPods > maxPods {
		return fmt.Errorf("--new-pods=%d: must be from 1 to %d", o.NewPods, maxPods)
	}
	if !(o.ClaimChurn > 0 && o.ClaimChurn <= maxFinishRate) {
		return fmt.Errorf("--claim-churn=%g: must be above 0 and at most %d", o.ClaimChurn, maxFinishRate)
	}
	if o.HeartbeatPeriod == 0 {
		return fmt.Errorf("--heartbeat-period=0: scale mode with --rows=e measures the node daemons' steady state, which needs their period")
	}
	return nil
}

// ScaleDRA reports whether scale mode measures DRA mode (--rows=e alone)
// rather than the extender.
func (o *Options) ScaleDRA() bool {
	return o.Mode == ModeScale && len(o.Rows) == 1 && o.Rows[0] == RowDRA
}

// Wants reports whether the row is asked for.
func (o *Options) Wants(row string) bool { return slices.Contains(o.Rows, row) }

// AllBacklogRows are the rows backlog mode may run: Tessera's three
// modes, and extender mode with its fit gate.
func AllBacklogRows() []string { return []string{RowTessera, RowFitGate, RowPlugin, RowDRA} }

// runsKubeScheduler reports whether the mode runs kube-scheduler or
// tessera-scheduler, whose rows may need tessera-scheduler's binary and a
// pinned control plane; scale mode's extender and writes mode run neither.
func (o *Options) runsKubeScheduler() bool {
	return o.Mode != ModeWrites && (o.Mode != ModeScale || o.ScaleDRA())
}
