package harness

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/klog/v2"

	"github.com/tessera-gpu/tessera/hack/bench/harness/meter"
	"github.com/tessera-gpu/tessera/test/framework"
)

// BuildExtender builds ./scheduler into dir and returns the binary's path.
func BuildExtender(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "tessera-scheduler")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./scheduler")
	cmd.Dir = framework.RepoRoot()
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the extender (go build ./scheduler; or give --extender-bin): %w\n%s", err, out)
	}
	klog.FromContext(ctx).Info("Built the extender", "binary", bin)
	return bin, nil
}

// ExtenderProcess is Tessera's extender running as its own process, as
// in a cluster, so that its memory is its own.
type ExtenderProcess struct {
	*framework.Process
	URL     string
	logFile string
}

// StartExtender runs the extender binary against the kubeconfig on a free
// loopback port, logging to dir, and waits until it is ready (its view
// synced with the API server).
func StartExtender(ctx context.Context, bin, kubeconfig, schedulerName, dir string, extra, env []string) (*ExtenderProcess, error) {
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	address := "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{
		"--kubeconfig=" + kubeconfig,
		"--listen-address=" + address,
		// The bench scrapes the extender's own listener; no second one on
		// every address, where two runs would collide.
		"--metrics-address=",
		"--scheduler-name=" + schedulerName,
		// The bench writes each GPUNode's heartbeat once; a device plugin
		// would refresh it while the run lasts.
		"--heartbeat-max-age=24h",
	}, extra...)
	proc, err := framework.StartProcessWithEnv(dir, bin, "tessera-scheduler", env, args...)
	if err != nil {
		return nil, fmt.Errorf("starting the extender %s: %w", bin, err)
	}
	p := &ExtenderProcess{Process: proc, URL: "http://" + address, logFile: filepath.Join(dir, "tessera-scheduler.log")}
	klog.FromContext(ctx).Info("Started the extender", "pid", p.Pid(), "url", p.URL, "log", p.logFile)
	if err := p.WaitOK(ctx, p.URL+"/readyz", readyMax); err != nil {
		p.Stop()
		return nil, fmt.Errorf("the extender did not become ready: %w", err)
	}
	return p, nil
}

// Memory returns the process's resident memory now and at its peak, from
// /proc/<pid>/status (VmRSS and VmHWM).
func (p *ExtenderProcess) Memory() (rss, peak int64, err error) {
	return ProcMemory(p.Pid())
}

// CPU returns the process's CPU time (user and system) so far.
func (p *ExtenderProcess) CPU() (time.Duration, error) {
	return meter.ProcessCPU(p.Pid())
}

// ProcMemory reads VmRSS and VmHWM, in bytes, of a process.
func ProcMemory(pid int) (rss, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	defer func() { _ = f.Close() }()
	s := bufio.NewScanner(f)
	for s.Scan() {
		key, value, ok := strings.Cut(s.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		kib, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parsing %s of process %d: %w", key, pid, err)
		}
		if key == "VmRSS" {
			rss = kib << 10
		} else {
			peak = kib << 10
		}
	}
	return rss, peak, s.Err()
}

// freeLoopbackPort returns a loopback TCP port that was free a moment ago.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port, nil
}
