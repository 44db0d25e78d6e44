package helm

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/yaml"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/test/framework"
	"github.com/tessera-gpu/tessera/test/nodeagent"
)

// imageBinDir is where the Dockerfile puts the daemons in the image.
const imageBinDir = "/usr/local/bin"

// stampedVersion is the version the tests stamp the daemons with.
const stampedVersion = "v0.0.0-helm-test"

// buildDaemons builds the daemons with hack/build.sh, as the Dockerfile
// does, stamped with stampedVersion, and returns the path of each by its
// path in the image.
func buildDaemons(t testing.TB) map[string]string {
	t.Helper()
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(framework.RepoRoot(), "hack", "build.sh"), dir)
	cmd.Env = append(os.Environ(), "VERSION="+stampedVersion)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("hack/build.sh: %v\n%s", err, tail(output, 4000))
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]string{}
	for _, e := range entries {
		paths[imageBinDir+"/"+e.Name()] = filepath.Join(dir, e.Name())
	}
	return paths
}

// podContainers returns a rendered workload's init containers and
// containers.
func podContainers(workload *unstructured.Unstructured) []any {
	initContainers, _, _ := unstructured.NestedSlice(workload.Object, "spec", "template", "spec", "initContainers")
	containers, _, _ := unstructured.NestedSlice(workload.Object, "spec", "template", "spec", "containers")
	return append(initContainers, containers...)
}

// containerCommand returns a rendered container's command line; the
// container may be an init container (a native sidecar).
func containerCommand(t testing.TB, workload *unstructured.Unstructured, container string) []string {
	t.Helper()
	for _, c := range podContainers(workload) {
		c := c.(map[string]any)
		if c["name"] != container {
			continue
		}
		var command []string
		for _, arg := range c["command"].([]any) {
			command = append(command, arg.(string))
		}
		return command
	}
	t.Fatalf("%s has no container %s", workload.GetName(), container)
	return nil
}

// withFlags replaces the value of each named flag in a command line (the
// flag must be there) and appends the flags it lacks.
func withFlags(t testing.TB, command []string, flags map[string]string) []string {
	t.Helper()
	out := append([]string(nil), command...)
	for name, value := range flags {
		replaced := false
		for i, arg := range out {
			if strings.HasPrefix(arg, "--"+name+"=") {
				out[i], replaced = "--"+name+"="+value, true
			}
		}
		if !replaced {
			out = append(out, "--"+name+"="+value)
		}
	}
	return out
}

// serviceAccountKubeconfig writes a kubeconfig that acts as the service
// account (on node, when set, as a pod-bound token would) by impersonation.
func serviceAccountKubeconfig(t testing.TB, cp *framework.ControlPlane, namespace, serviceAccount, node string) string {
	t.Helper()
	config, err := clientcmd.LoadFromFile(cp.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	user := config.AuthInfos[config.Contexts[config.CurrentContext].AuthInfo]
	user.Impersonate = "system:serviceaccount:" + namespace + ":" + serviceAccount
	user.ImpersonateGroups = []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}
	if node != "" {
		user.ImpersonateUserExtra = map[string][]string{nodeNameExtra: {node}}
	}
	path := filepath.Join(t.TempDir(), serviceAccount+".kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// daemon is a running daemon whose output goes to a log file.
type daemon struct {
	name string
	p    *framework.Process
}

// startDaemon runs command with the extra environment until the test ends.
func startDaemon(t testing.TB, name string, command []string, env ...string) *daemon {
	t.Helper()
	p, err := framework.StartProcessWithEnv(t.TempDir(), command[0], name, env, command[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		p.Stop()
		if t.Failed() {
			t.Logf("log of %s:\n%s", name, p.LogTail(4000))
		}
	})
	return &daemon{name: name, p: p}
}

func tail(data []byte, n int) []byte {
	if len(data) > n {
		return data[len(data)-n:]
	}
	return data
}

// waitFor polls cond until it holds, failing the test when the daemon
// exits or a minute passes.
func (d *daemon) waitFor(t testing.TB, what string, cond func(ctx context.Context) bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if exited, err := d.p.Exited(); exited {
			return false, fmt.Errorf("%s exited (%v):\n%s", d.name, err, d.p.LogTail(4000))
		}
		return cond(ctx), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func httpOK(ctx context.Context, url string) bool {
	status, _ := framework.HTTPGet(ctx, url)
	return status == http.StatusOK
}

// checkBuildInfo checks that a daemon's /metrics names its component and
// the version its build was stamped with.
func checkBuildInfo(ctx context.Context, t *testing.T, url, component string) {
	t.Helper()
	status, body := framework.HTTPGet(ctx, url)
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "tessera_build_info{") && strings.Contains(line, `component="`+component+`"`) &&
			strings.Contains(line, `version="`+stampedVersion+`"`) && strings.HasSuffix(line, "} 1") {
			return
		}
	}
	t.Errorf("GET %s = %d without tessera_build_info{component=%q,version=%q} 1:\n%s", url, status, component, stampedVersion, tail([]byte(body), 2000))
}

// checkDaemons runs each daemon with the command line the chart renders,
// as the chart's service account for it, against the control plane where
// the release is installed: the flags must parse and the RBAC must be
// enough for each to come up and do its first work.
func checkDaemons(ctx context.Context, t *testing.T, cp *framework.ControlPlane, namespace string, objs []*unstructured.Unstructured) {
	bins := buildDaemons(t)
	local := func(command []string) []string {
		bin, ok := bins[command[0]]
		if !ok {
			t.Fatalf("the chart runs %s, which the Dockerfile does not build", command[0])
		}
		return append([]string{bin}, command[1:]...)
	}

	t.Run("version", func(t *testing.T) {
		for image, bin := range bins {
			out, err := exec.Command(bin, "--version").CombinedOutput()
			want := filepath.Base(image) + " " + stampedVersion + " ("
			if err != nil || !strings.HasPrefix(string(out), want) {
				t.Errorf("%s --version = %q, %v; want it to start with %q", image, out, err, want)
			}
		}
	})

	t.Run("extender", func(t *testing.T) {
		scheduler := findOne(t, objs, "Deployment", "-scheduler")
		sa := serviceAccountOf(t, objs, "Deployment", "-scheduler")
		addr, metricsAddr := framework.FreeAddress(t), framework.FreeAddress(t)
		d := startDaemon(t, "extender", withFlags(t, local(containerCommand(t, scheduler, "extender")), map[string]string{
			"listen-address":  addr,
			"metrics-address": metricsAddr,
			"kubeconfig":      serviceAccountKubeconfig(t, cp, namespace, sa, ""),
		}))
		// Ready means its informers on pods, GPUNodes and GPUAllocations
		// listed and watched under the chart's RBAC. The kubelet's probe
		// asks the metrics address, as here.
		d.waitFor(t, "the extender to be ready", func(ctx context.Context) bool { return httpOK(ctx, "http://"+metricsAddr+"/readyz") })
		checkBuildInfo(ctx, t, "http://"+metricsAddr+"/metrics", "extender")
	})

	t.Run("webhook", func(t *testing.T) {
		webhook := findOne(t, objs, "Deployment", "-webhook")
		sa := serviceAccountOf(t, objs, "Deployment", "-webhook")
		metricsAddr := framework.FreeAddress(t)
		d := startDaemon(t, "webhook", withFlags(t, local(containerCommand(t, webhook, "webhook")), map[string]string{
			"listen-address":  framework.FreeAddress(t),
			"metrics-address": metricsAddr,
			"kubeconfig":      serviceAccountKubeconfig(t, cp, namespace, sa, ""),
		}), "POD_NAMESPACE="+namespace)
		d.waitFor(t, "the webhook to be ready", func(ctx context.Context) bool { return httpOK(ctx, "http://"+metricsAddr+"/readyz") })
		checkBuildInfo(ctx, t, "http://"+metricsAddr+"/metrics", "webhook")
		// Self-managed TLS: its Secret, and its authority in both
		// configurations' caBundle, written under the chart's RBAC.
		name := findOne(t, objs, "MutatingWebhookConfiguration", "").GetName()
		d.waitFor(t, "the caBundles", func(ctx context.Context) bool {
			m, err := cp.Kube.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			if err != nil || len(m.Webhooks) == 0 || len(m.Webhooks[0].ClientConfig.CABundle) == 0 {
				return false
			}
			v, err := cp.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, name, metav1.GetOptions{})
			return err == nil && len(v.Webhooks) > 0 && bytes.Equal(v.Webhooks[0].ClientConfig.CABundle, m.Webhooks[0].ClientConfig.CABundle)
		})
		secret, err := cp.Kube.CoreV1().Secrets(namespace).Get(ctx, name+"-tls", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("the webhook's Secret: %v", err)
		}
		if secret.Type != corev1.SecretTypeTLS {
			t.Errorf("the webhook's Secret is of type %s, want %s", secret.Type, corev1.SecretTypeTLS)
		}
	})

	t.Run("kube-scheduler with leader election", func(t *testing.T) {
		scheduler := findOne(t, objs, "Deployment", "-scheduler")
		sa := serviceAccountOf(t, objs, "Deployment", "-scheduler")
		kubeconfig := serviceAccountKubeconfig(t, cp, namespace, sa, "")
		// The rendered configuration, told where the API server is (in a
		// pod, the in-cluster configuration does that).
		config := schedulerConfig(t, objs)
		config["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
		data, err := yaml.Marshal(config)
		if err != nil {
			t.Fatal(err)
		}
		configFile := filepath.Join(t.TempDir(), "kube-scheduler-config.yaml")
		if err := os.WriteFile(configFile, data, 0o644); err != nil {
			t.Fatal(err)
		}
		command := containerCommand(t, scheduler, "kube-scheduler")
		command[0] = filepath.Join(controlPlaneBin(t), "kube-scheduler")
		port, err := framework.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		d := startDaemon(t, "kube-scheduler", withFlags(t, command, map[string]string{
			"config":      configFile,
			"secure-port": strconv.Itoa(port),
			// The kubelet's probes and metrics scrapes are authenticated
			// through these, as in a pod through the in-cluster ones; the
			// lookup of the client CA needs the authentication-reader
			// binding.
			"authentication-kubeconfig": kubeconfig,
			"authorization-kubeconfig":  kubeconfig,
			"bind-address":              "127.0.0.1",
		}))
		lease := scheduler.GetName()
		d.waitFor(t, "kube-scheduler to hold its lease "+namespace+"/"+lease, func(ctx context.Context) bool {
			l, err := cp.Kube.CoordinationV1().Leases(namespace).Get(ctx, lease, metav1.GetOptions{})
			return err == nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != ""
		})
		insecure := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
		d.waitFor(t, "kube-scheduler's /readyz", func(ctx context.Context) bool {
			resp, err := insecure.Get(fmt.Sprintf("https://127.0.0.1:%d/readyz", port))
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == http.StatusOK
		})
	})

	t.Run("device plugin", func(t *testing.T) {
		const node = "gpu-node-1"
		plugin := findOne(t, objs, "DaemonSet", "-device-plugin")
		sa := serviceAccountOf(t, objs, "DaemonSet", "-device-plugin")
		if _, err := framework.NewReadyNode(ctx, cp.Kube, node, nil); err != nil {
			t.Fatal(err)
		}
		// A kubelet stand-in serves kubelet.sock; the socket path must stay
		// short, so the directory is not under the test's long TempDir.
		pluginDir, err := os.MkdirTemp("", "dp")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(pluginDir) })
		podResourcesDir, err := os.MkdirTemp("", "pr")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(podResourcesDir) })
		podResources := filepath.Join(podResourcesDir, "kubelet.sock")
		agentCtx, stopAgent := context.WithCancel(ctx)
		agentDone := make(chan error, 1)
		agent := &nodeagent.Agent{NodeName: node, PluginDir: pluginDir, PodResourcesSocket: podResources, Kube: cp.Kube, DeviceResources: []string{"nvidia.com/gpu"}}
		go func() { agentDone <- agent.Run(agentCtx) }()
		t.Cleanup(func() { stopAgent(); <-agentDone })

		dir := t.TempDir()
		config := filepath.Join(dir, "config.yaml")
		cm := findOne(t, objs, "ConfigMap", "-device-plugin")
		text, _, _ := unstructured.NestedString(cm.Object, "data", "config.yaml")
		gpus := filepath.Join(dir, "gpus.yaml")
		for file, data := range map[string]string{
			config: text,
			gpus:   "gpus:\n- uuid: GPU-chart-0\n  model: NVIDIA A100-SXM4-40GB\n  memoryMiB: 40960\n- uuid: GPU-chart-1\n  model: NVIDIA A100-SXM4-40GB\n  memoryMiB: 40960\n",
		} {
			if err := os.WriteFile(file, []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		// The chart's configuration file, with the host paths a pod would
		// have (kubelet directory, the host's /proc) pointed at this
		// machine's, and simulated GPUs in place of NVML.
		metricsAddr := framework.FreeAddress(t)
		d := startDaemon(t, "device-plugin", withFlags(t, local(containerCommand(t, plugin, "device-plugin")), map[string]string{
			"config":               config,
			"device-plugin-dir":    pluginDir,
			"pod-resources-socket": podResources,
			"proc-root":            "/proc",
			"simulated-gpu-file":   gpus,
			"metrics-address":      metricsAddr,
			"kubeconfig":           serviceAccountKubeconfig(t, cp, namespace, sa, node),
		}), "NODE_NAME="+node)
		// Publishing its GPUNode takes create on gpunodes and apply on
		// gpunodes/status, through RBAC and the own-node policy.
		// Once registered, it says that it learns from the kubelet's
		// pod-resources API which pod each Allocate serves.
		d.waitFor(t, "the GPUNode to be published, identifying pods through pod-resources", func(ctx context.Context) bool {
			gn, err := cp.Tessera.GpuV1alpha1().GPUNodes().Get(ctx, node, metav1.GetOptions{})
			return err == nil && len(gn.Status.Devices) == 2 && gn.Status.PodIdentification == gpuv1alpha1.PodIdentificationPodResources
		})
		checkBuildInfo(ctx, t, "http://"+metricsAddr+"/metrics", "device-plugin")

		// The kubelet's probes, as the chart renders them, on the address
		// the chart's metrics port stands for here.
		probes := containerProbes(t, plugin, "device-plugin", "metrics")
		for _, kind := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
			if probes[kind] == "" {
				t.Fatalf("the device plugin has no %s on its metrics port", kind)
			}
		}
		probeAll := func(ctx context.Context, wantOK bool) bool {
			for _, path := range probes {
				status, _ := framework.HTTPGet(ctx, "http://"+metricsAddr+path)
				if (status == http.StatusOK) != wantOK || status == 0 {
					return false
				}
			}
			return true
		}
		d.waitFor(t, "the probes to pass while the plugin is registered", func(ctx context.Context) bool { return probeAll(ctx, true) })
		// The kubelet goes away (its socket with it): the registration is
		// broken, and every probe fails until it is back.
		stopAgent()
		<-agentDone
		agentDone <- nil
		d.waitFor(t, "the probes to fail once the registration is broken", func(ctx context.Context) bool { return probeAll(ctx, false) })
		for kind, path := range probes {
			if status, body := framework.HTTPGet(ctx, "http://"+metricsAddr+path); !strings.Contains(body, "kubelet-registration") {
				t.Errorf("%s %s = %d %q, want the broken registration named", kind, path, status, body)
			}
		}
	})
}

// containerProbes returns the paths of a container's HTTP probes on the
// named port, by kind (livenessProbe, ...).
func containerProbes(t testing.TB, workload *unstructured.Unstructured, container, port string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, c := range podContainers(workload) {
		c := c.(map[string]any)
		if c["name"] != container {
			continue
		}
		for _, kind := range []string{"startupProbe", "livenessProbe", "readinessProbe"} {
			if p, _, _ := unstructured.NestedString(c, kind, "httpGet", "port"); p == port {
				out[kind], _, _ = unstructured.NestedString(c, kind, "httpGet", "path")
			}
		}
	}
	return out
}

// controlPlaneBin returns the directory of the pinned control-plane
// binaries, as the framework finds it.
func controlPlaneBin(t testing.TB) string {
	t.Helper()
	if dir := os.Getenv(framework.BinDirEnv); dir != "" {
		return dir
	}
	out, err := exec.Command(filepath.Join(framework.RepoRoot(), "hack", "build-controlplane.sh")).Output()
	if err != nil {
		t.Fatalf("hack/build-controlplane.sh: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1]
}
