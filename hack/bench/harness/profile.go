package harness

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
)

// Profiler takes CPU profiles of kube-apiserver, of the scheduler and, in
// row c, of the extender while a row schedules, so that what dominates each row's CPU
// time can be read with `go tool pprof`, and an execution trace of the
// extender (`go tool trace`), which shows where its calls wait.
type Profiler struct {
	Seconds int
	wg      sync.WaitGroup
}

// ExtenderFlags are the extra flags for the extender: --profiling when
// profiles are taken, and then the user's.
func (o *Options) ExtenderFlags() []string {
	if o.ProfileSeconds > 0 {
		return append([]string{"--profiling"}, o.ExtenderArgs...)
	}
	return o.ExtenderArgs
}

// Start begins a profile of seconds of every process that serves one and
// writes them into dir as <process>.cpu.pprof, with the extender's trace as
// tessera-scheduler.trace. extenderURL is empty for rows without Tessera's
// extender.
func (p *Profiler) Start(ctx context.Context, env *ClusterEnv, extenderURL string) {
	if p.Seconds <= 0 {
		return
	}
	seconds := strconv.Itoa(p.Seconds)
	p.wg.Add(1)
	go p.fetch(ctx, env, "kube-apiserver.cpu.pprof", func(ctx context.Context) ([]byte, error) {
		return env.ControlPlane.Kube.Discovery().RESTClient().Get().AbsPath("/debug/pprof/profile").
			Param("seconds", seconds).Timeout(0).DoRaw(ctx)
	})
	if extenderURL != "" {
		p.wg.Add(2)
		go p.fetch(ctx, env, "tessera-scheduler.cpu.pprof", func(ctx context.Context) ([]byte, error) {
			return meter.HTTPGet(ctx, extenderURL+"/debug/pprof/profile?seconds="+seconds)
		})
		go p.fetch(ctx, env, "tessera-scheduler.trace", func(ctx context.Context) ([]byte, error) {
			return meter.HTTPGet(ctx, extenderURL+"/debug/pprof/trace?seconds="+seconds)
		})
	}
}

// StartScheduler begins a profile of seconds of the scheduler process
// into dir as <name>.cpu.pprof, read from its secure port as /metrics is.
func (p *Profiler) StartScheduler(ctx context.Context, env *ClusterEnv, scraper *SchedulerScraper, name string) {
	if p.Seconds <= 0 {
		return
	}
	p.wg.Add(1)
	go p.fetch(ctx, env, name+".cpu.pprof", func(ctx context.Context) ([]byte, error) {
		return meter.HTTPGetWith(ctx, scraper.Client, scraper.Base+"/debug/pprof/profile?seconds="+strconv.Itoa(p.Seconds))
	})
}

// fetch writes what get returns into dir as file, and logs what failed;
// it ends one of p.wg's profiles.
func (p *Profiler) fetch(ctx context.Context, env *ClusterEnv, file string, get func(context.Context) ([]byte, error)) {
	defer p.wg.Done()
	logger := klog.FromContext(ctx)
	ctx, cancel := context.WithTimeout(ctx, time.Duration(p.Seconds)*time.Second+time.Minute)
	defer cancel()
	data, err := get(ctx)
	if err == nil {
		file = filepath.Join(env.Dir, file)
		if err = os.WriteFile(file, data, 0o644); err == nil {
			logger.Info("Wrote a profile", "file", file)
			return
		}
	}
	logger.Error(err, "Taking a profile", "file", file)
}

// Wait returns once every profile started is written or failed.
func (p *Profiler) Wait() { p.wg.Wait() }
