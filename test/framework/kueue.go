package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/tessera-gpu/tessera/webhook/admission"
)

// KueueBinEnv names the directory that holds kueue-manager and the config/
// of the module it was built from. When it is unset the framework asks
// hack/build-kueue.sh, which builds it once and caches it.
const KueueBinEnv = "TESSERA_KUEUE_BIN"

// KueueNamespace is where Kueue keeps its certificate Secret and where its
// webhook Service is registered.
const KueueNamespace = "kueue-system"

// KueueConfigFile is the shipped Kueue configuration, relative to the
// repository root.
const KueueConfigFile = "deploy/examples/kueue/config/kueue-config.yaml"

// KueueResource is a resource of Kueue's API, at the version its manager
// stores, such as "workloads" or "clusterqueues".
func KueueResource(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: resource}
}

var kueueDir = sync.OnceValues(func() (string, error) {
	dir := os.Getenv(KueueBinEnv)
	if dir == "" {
		var err error
		if dir, err = build("build-kueue.sh"); err != nil {
			return "", fmt.Errorf("building Kueue: %w", err)
		}
	}
	for _, name := range []string{"kueue-manager", filepath.Join("config", "crd", "kustomization.yaml"), filepath.Join("config", "webhook", "manifests.yaml")} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			return "", fmt.Errorf("%s missing in %s (run hack/build-kueue.sh): %w", name, dir, err)
		}
	}
	return dir, nil
})

// StartKueue runs Kueue's controller manager against the control plane
// until the test ends, as StartKueueProcess does. The control plane should
// run the workload controllers (Options.Workloads) for Kueue's Jobs to get
// pods.
func (cp *ControlPlane) StartKueue(t testing.TB) *Process {
	t.Helper()
	return cp.StartKueueWith(t, filepath.Join(RepoRoot(), KueueConfigFile))
}

// StartKueueWith is StartKueue with the Kueue configuration file config
// in place of the shipped one.
func (cp *ControlPlane) StartKueueWith(t testing.TB, config string) *Process {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p, err := cp.startKueueProcess(ctx, config)
	if p != nil {
		stopOnCleanup(t, p)
	}
	if err != nil {
		t.Fatalf("starting Kueue: %v", err)
	}
	return p
}

// StartKueueProcess installs Kueue's CRDs and webhook configurations as
// its module ships them, and runs its controller manager outside the
// cluster with the shipped configuration (KueueConfigFile), on loopback
// ports, leader election off. Kueue makes its own certificates and writes
// the caBundles; the framework writes them to Kueue's certificate
// directory, as the kubelet would mount their Secret. It returns once Kueue is ready and the API server calls
// its webhooks. The process is also stopped by Stop; on error it may be
// returned, and must be stopped.
func (cp *ControlPlane) StartKueueProcess(ctx context.Context) (*Process, error) {
	return cp.startKueueProcess(ctx, filepath.Join(RepoRoot(), KueueConfigFile))
}

func (cp *ControlPlane) startKueueProcess(ctx context.Context, configFile string) (*Process, error) {
	dir, err := kueueDir()
	if err != nil {
		return nil, err
	}
	webhookPort, err := FreePort()
	if err != nil {
		return nil, err
	}
	if err := cp.installKueue(ctx, filepath.Join(dir, "config"), int32(webhookPort)); err != nil {
		return nil, err
	}
	healthAddr, err := freeLoopbackAddress()
	if err != nil {
		return nil, err
	}
	certDir := filepath.Join(cp.Dir, "kueue-certs")
	config, err := cp.writeKueueConfig(configFile, webhookPort, healthAddr, certDir)
	if err != nil {
		return nil, err
	}
	p, err := cp.startBinary(filepath.Join(dir, "kueue-manager"), "kueue",
		"--config="+config, "--kubeconfig="+cp.KubeconfigPath, "--zap-log-level=2")
	if err != nil {
		return nil, err
	}
	cp.mountSecret(p, KueueNamespace, kueueWebhookSecret, certDir)
	if err := p.WaitOK(ctx, "http://"+healthAddr+"/readyz", 90*time.Second); err != nil {
		return p, fmt.Errorf("waiting for Kueue to become ready: %w", err)
	}
	return p, cp.waitKueueWebhooks(ctx)
}

// writeKueueConfig writes the Kueue configuration file with what a
// process outside the cluster needs: loopback ports, a certificate
// directory of its own (the default is shared by every process on the
// machine), its own certificate management on the Service and Secret
// installKueue made, no leader election, higher client rate limits, and
// no visibility API server (nothing registers its APIService here).
func (cp *ControlPlane) writeKueueConfig(file string, webhookPort int, healthAddr, certDir string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	config := map[string]any{}
	if err := yaml.Unmarshal(data, &config); err != nil {
		return "", fmt.Errorf("decoding %s: %w", file, err)
	}
	metricsAddr, err := freeLoopbackAddress()
	if err != nil {
		return "", err
	}
	config["webhook"] = map[string]any{"port": webhookPort, "host": "127.0.0.1", "certDir": certDir}
	config["health"] = map[string]any{"healthProbeBindAddress": healthAddr}
	config["metrics"] = map[string]any{"bindAddress": metricsAddr}
	config["internalCertManagement"] = map[string]any{
		"enable": true, "webhookServiceName": kueueWebhookService, "webhookSecretName": kueueWebhookSecret,
	}
	config["leaderElection"] = map[string]any{"leaderElect": false}
	config["clientConnection"] = map[string]any{"qps": 500, "burst": 1000}
	gates, _ := config["featureGates"].(map[string]any)
	if gates == nil {
		gates = map[string]any{}
	}
	gates["VisibilityOnDemand"] = false
	config["featureGates"] = gates
	out, err := yaml.Marshal(config)
	if err != nil {
		return "", err
	}
	path := filepath.Join(cp.Dir, "kueue-config.yaml")
	return path, os.WriteFile(path, out, 0o644)
}

func freeLoopbackAddress() (string, error) {
	port, err := FreePort()
	if err != nil {
		return "", err
	}
	return "127.0.0.1:" + strconv.Itoa(port), nil
}

// KueueScope returns what Tessera's webhook is told of the Kueue
// configuration file (its --kueue-integrations and
// --kueue-managed-namespaces): the integrations Kueue manages, and its
// managedJobsNamespaceSelector as a label selector, each Kueue's default
// when the file sets none.
func KueueScope(file string) (integrations []string, namespaces string, err error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, "", err
	}
	var config struct {
		ManagedJobsNamespaceSelector *metav1.LabelSelector `json:"managedJobsNamespaceSelector"`
		Integrations                 struct {
			Frameworks []string `json:"frameworks"`
		} `json:"integrations"`
	}
	if err := yaml.Unmarshal(data, &config); err != nil {
		return nil, "", fmt.Errorf("decoding %s: %w", file, err)
	}
	if len(config.Integrations.Frameworks) == 0 {
		// Kueue's default.
		config.Integrations.Frameworks = []string{"batch/job"}
	}
	if config.ManagedJobsNamespaceSelector == nil {
		return config.Integrations.Frameworks, admission.DefaultKueueManagedNamespaces, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(config.ManagedJobsNamespaceSelector)
	if err != nil {
		return nil, "", fmt.Errorf("%s: managedJobsNamespaceSelector: %w", file, err)
	}
	return config.Integrations.Frameworks, selector.String(), nil
}
