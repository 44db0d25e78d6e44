package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
	"github.com/tessera-gpu/tessera/test/framework"
)

// TestLocalUp runs hack/local-up.sh exactly as README.md gives it, from
// the repository root with no flags and no terminal: it waits for the
// examples to be placed, checks where they landed, checks the extender's
// per-GPU metrics against the GPUAllocations, then stops it with SIGINT and
// checks that nothing it started is left running.
func TestLocalUp(t *testing.T) {
	root := framework.RepoRoot()
	cmd := exec.Command("hack/local-up.sh")
	cmd.Dir = root
	out, up := startLocalUp(t, cmd)
	select {
	case <-up:
	case <-time.After(15 * time.Minute):
		t.Fatalf("local-up did not come up:\n%s", out.String())
	}
	output := out.String()
	t.Logf("local-up output:\n%s", output)

	kubeconfig := field(t, output, "export KUBECONFIG=")
	if !filepath.IsAbs(kubeconfig) {
		t.Errorf("local-up printed KUBECONFIG=%s; a relative path works only from one directory", kubeconfig)
	}
	// A second terminal need not be in the repository.
	t.Chdir(t.TempDir())
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(config)
	tessera := versioned.NewForConfigOrDie(config)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	placed := checkPlacements(ctx, t, kube, tessera)
	checkMetrics(ctx, t, tessera, field(t, output, "extender GPU state"), placed)
	checkColumns(ctx, t, kube, tessera, placed)
	checkPinnedReason(ctx, t, kube, placed)
	checkVolumeBinds(ctx, t, kube)

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("local-up did not stop within a minute of Ctrl-C")
	}
	checkNothingLeft(t, root)
}

// TestLocalUpExitAfterDemo runs "hack/local-up.sh --exit-after-demo" as
// README.md and docs/local-up.md give it, from the repository root and
// from another working directory, in plugin mode (--scheduler=plugin) and
// with a state dir deeper than a socket's path may be, and checks the
// placements it prints and that it stops by itself, leaving nothing
// running.
func TestLocalUpExitAfterDemo(t *testing.T) {
	root := framework.RepoRoot()
	for _, tc := range []struct {
		name, dir, script string
		flags             []string
	}{
		{name: "from the repository root", dir: root, script: "hack/local-up.sh"},
		{name: "from another directory", dir: t.TempDir(), script: filepath.Join(root, "hack", "local-up.sh")},
		{name: "plugin mode", dir: root, script: "hack/local-up.sh", flags: []string{"--scheduler=plugin"}},
		// The kubelet's sockets live apart from the state dir, or this one
		// would make their paths longer than a Unix socket's 107 bytes.
		{name: "a state dir too deep for a socket path", dir: root, script: "hack/local-up.sh",
			flags: []string{"--state-dir=" + filepath.Join(t.TempDir(), strings.Repeat("deep/", 20))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command(tc.script, append(tc.flags, "--exit-after-demo")...)
			cmd.Dir = tc.dir
			output := runLocalUp(t, cmd)
			checkPrintedPlacements(t, output)
			checkNothingLeft(t, root)
		})
	}
}

// startLocalUp starts cmd with its output collected, and returns the
// output and a channel closed once local-up says it is up. The process is
// killed when the test ends.
func startLocalUp(t *testing.T, cmd *exec.Cmd) (*output, <-chan struct{}) {
	t.Helper()
	out := &output{up: make(chan struct{})}
	cmd.Stdin = nil
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return out, out.up
}

// runDemo runs hack/local-up.sh with flags and --exit-after-demo from the
// repository root, to its end, and returns what it printed.
func runDemo(t *testing.T, flags ...string) string {
	t.Helper()
	cmd := exec.Command("hack/local-up.sh", append(flags, "--exit-after-demo")...)
	cmd.Dir = framework.RepoRoot()
	return runLocalUp(t, cmd)
}

// runLocalUp runs cmd, a local-up that exits after its demo, to its end
// and returns what it printed; the test fails if it fails or takes more
// than 15 minutes.
func runLocalUp(t *testing.T, cmd *exec.Cmd) string {
	t.Helper()
	out, _ := startLocalUp(t, cmd)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("%s failed: %v\n%s", strings.Join(cmd.Args, " "), err, out.String())
		}
	case <-time.After(15 * time.Minute):
		t.Fatalf("%s did not finish:\n%s", strings.Join(cmd.Args, " "), out.String())
	}
	t.Logf("local-up output:\n%s", out.String())
	return out.String()
}

// output collects what local-up prints, written by exec's copying
// goroutine and read by the test, and closes up at ">>> Tessera is up".
type output struct {
	mu   sync.Mutex
	b    strings.Builder
	up   chan struct{}
	isUp bool
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.Write(p)
	if !o.isUp && strings.Contains(o.b.String(), "\n>>> Tessera is up") {
		o.isUp = true
		close(o.up)
	}
	return len(p), nil
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// checkPrintedPlacements checks the table local-up prints: every example
// pod Running, and where the examples that pin a model or a node landed.
func checkPrintedPlacements(t *testing.T, output string) {
	t.Helper()
	nodes := map[string]string{}
	for _, line := range strings.Split(output, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 3 || fields[0] == "POD" || strings.HasPrefix(line, ">>>") {
			continue
		}
		if fields[1] != string(corev1.PodRunning) && fields[1] != string(corev1.PodPending) {
			continue
		}
		if fields[1] != string(corev1.PodRunning) {
			t.Errorf("example pod %s is %s: %s", fields[0], fields[1], line)
		}
		nodes[fields[0]] = fields[2]
	}
	if len(nodes) != 13 {
		t.Errorf("the printed table lists %d example pods, want 13", len(nodes))
	}
	checkCPUOnly(t, output)
	// The same file DRA mode applies (TestLocalUpDRA), placed alike.
	checkHAMiStyle(t, placementRows(t, output)["hami-style"])
	if nodes["a100-only"] != "gpu-a100" {
		t.Errorf("the table puts a100-only on %q, want gpu-a100", nodes["a100-only"])
	}
	if nodes["not-t4"] == "gpu-t4" {
		t.Error("the table puts not-t4 on the T4 node")
	}
	if nodes["binpack-1"] != nodes["binpack-2"] {
		t.Errorf("the table puts the binpack pods on %q and %q, want one node", nodes["binpack-1"], nodes["binpack-2"])
	}
}

// checkNothingLeft fails the test if a process started by local-up, which
// keeps its state under the repository's _output/local-up, still runs.
func checkNothingLeft(t *testing.T, root string) {
	t.Helper()
	if left := processesUsing(filepath.Join(root, "_output", "local-up")); len(left) > 0 {
		t.Errorf("processes left running after local-up stopped: %v", left)
	}
}

// field returns the rest of the first output line that starts with prefix
// (after trimming spaces).
func field(t *testing.T, output, prefix string) string {
	t.Helper()
	for _, line := range strings.Split(output, "\n") {
		line = strings.TrimSpace(line)
		if rest, ok := strings.CutPrefix(line, prefix); ok {
			return strings.TrimSpace(rest)
		}
	}
	t.Fatalf("no line starting with %q in the output", prefix)
	return ""
}

// checkPlacements checks the rules each example shows and returns the
// GPUAllocations of the demo pods.
func checkPlacements(ctx context.Context, t *testing.T, kube kubernetes.Interface, tessera versioned.Interface) map[string]*gpuv1alpha1.GPUAllocation {
	pods, err := kube.CoreV1().Pods(demoNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	allocs := map[string]*gpuv1alpha1.GPUAllocation{}
	for _, pod := range pods.Items {
		if pod.Status.Phase != corev1.PodRunning {
			t.Errorf("pod %s is %s, want Running", pod.Name, pod.Status.Phase)
			continue
		}
		if pod.Name == "cpu-only" { // asks for no GPU: the cluster's own scheduler's
			if pod.Spec.SchedulerName != corev1.DefaultSchedulerName || pod.Spec.NodeName == "" {
				t.Errorf("pod cpu-only has scheduler %q and node %q, want default-scheduler's placement", pod.Spec.SchedulerName, pod.Spec.NodeName)
			}
			continue
		}
		if pod.Spec.SchedulerName != "tessera-scheduler" {
			t.Errorf("pod %s has scheduler %q: the webhook did not set Tessera's", pod.Name, pod.Spec.SchedulerName)
		}
		a, err := tessera.GpuV1alpha1().GPUAllocations(demoNamespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("pod %s has no GPUAllocation: %v", pod.Name, err)
			continue
		}
		if a.Status.Phase != gpuv1alpha1.AllocationAllocated {
			t.Errorf("allocation of %s is %q, want Allocated", pod.Name, a.Status.Phase)
		}
		allocs[pod.Name] = a
	}
	if len(allocs) != 12 {
		t.Fatalf("got %d placed example pods, want 12", len(allocs))
	}
	node := func(pod string) string { return allocs[pod].Spec.NodeName }
	devices := func(pod string) []gpuv1alpha1.DeviceAllocation { return allocs[pod].Spec.Containers[0].Devices }

	if node("a100-only") != "gpu-a100" {
		t.Errorf("a100-only landed on %s, want gpu-a100", node("a100-only"))
	}
	if node("not-t4") == "gpu-t4" {
		t.Error("not-t4 landed on the T4 node")
	}
	if d := devices("two-gpus"); len(d) != 2 || d[0].UUID == d[1].UUID {
		t.Errorf("two-gpus got %v, want two distinct GPUs", d)
	}
	if node("binpack-1") != node("binpack-2") {
		t.Errorf("binpack pods landed on %s and %s, want one node", node("binpack-1"), node("binpack-2"))
	}
	// Binpack goes to the busiest node, spread to the emptiest: with the
	// examples placed in file order, those are never the same node.
	for _, p := range []string{"spread-1", "spread-2"} {
		if node(p) == node("binpack-1") {
			t.Errorf("%s landed on the binpack pods' node %s, want the emptiest node", p, node(p))
		}
	}
	for _, alone := range []string{"exclusive-compute", "whole-gpu"} {
		uuid := devices(alone)[0].UUID
		for name, a := range allocs {
			for _, d := range a.Spec.Containers[0].Devices {
				if name != alone && d.UUID == uuid {
					t.Errorf("%s shares GPU %s with %s", alone, uuid, name)
				}
			}
		}
	}
	return allocs
}

// checkMetrics scrapes the extender and compares each GPU's allocated
// memory and cores, and its capacity, with the API's state.
func checkMetrics(ctx context.Context, t *testing.T, tessera versioned.Interface, url string, allocs map[string]*gpuv1alpha1.GPUAllocation) {
	families := scrape(t, url)
	memory, cores := map[string]float64{}, map[string]float64{}
	for _, a := range allocs {
		for _, c := range a.Spec.Containers {
			for _, d := range c.Devices {
				memory[d.UUID] += float64(d.MemoryMiB) * (1 << 20)
				cores[d.UUID] += float64(d.Cores)
			}
		}
	}
	nodes, err := tessera.GpuV1alpha1().GPUNodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, n := range nodes.Items {
		for _, d := range n.Status.Devices {
			seen++
			checkGPUSeries(t, families, "tessera_gpu_memory_allocated_bytes", d.UUID, memory[d.UUID])
			checkGPUSeries(t, families, "tessera_gpu_cores_allocated", d.UUID, cores[d.UUID])
			checkGPUSeries(t, families, "tessera_gpu_memory_capacity_bytes", d.UUID, float64(d.MemoryMiB)*(1<<20))
			checkGPUSeries(t, families, "tessera_gpu_cores_capacity", d.UUID, float64(d.Cores))
		}
	}
	if seen != 14 {
		t.Errorf("the GPUNodes list %d GPUs, want 14", seen)
	}
}

func checkGPUSeries(t *testing.T, families map[string]*model.Sample, name, uuid string, want float64) {
	t.Helper()
	got, ok := families[name+"/"+uuid]
	if !ok {
		t.Errorf("no %s series for GPU %s", name, uuid)
		return
	}
	if float64(got.Value) != want {
		t.Errorf("%s{uuid=%q} = %v, want %v", name, uuid, got.Value, want)
	}
}

// scrape returns the samples at url keyed by "name/uuid".
func scrape(t *testing.T, url string) map[string]*model.Sample {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scraping %s: %v", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	samples, err := expfmt.ExtractSamples(&expfmt.DecodeOptions{Timestamp: model.Now()}, decodeText(t, string(body))...)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*model.Sample{}
	for _, s := range samples {
		out[fmt.Sprintf("%s/%s", s.Metric[model.MetricNameLabel], s.Metric["uuid"])] = s
	}
	return out
}

// processesUsing lists the processes whose command line names dir.
func processesUsing(dir string) []string {
	entries, _ := os.ReadDir("/proc")
	var found []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(cmdline), "\x00", " "))
		}
	}
	return found
}

func decodeText(t *testing.T, body string) []*dto.MetricFamily {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parsing metrics: %v", err)
	}
	var out []*dto.MetricFamily
	for _, f := range families {
		out = append(out, f)
	}
	return out
}
