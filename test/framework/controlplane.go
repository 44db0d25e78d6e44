package framework

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tessera-gpu/tessera/generated/clientset/versioned"
)

// Options choose what runs besides etcd and kube-apiserver.
type Options struct {
	// ControllerManager also starts kube-controller-manager with the
	// controllers a cluster without kubelets can use (garbage collector,
	// namespaces, service accounts, resource quotas). The node lifecycle
	// controller stays off, since no kubelet heartbeats. The resourcequota
	// controller writes each ResourceQuota's status, its hard limits and
	// what its namespace uses: without it ResourceQuota's admission
	// refuses every pod that asks for what a quota limits ("status
	// unknown for quota").
	ControllerManager bool
	// DRA adds the resourceclaim controller to kube-controller-manager,
	// which makes ResourceClaims from a pod's templates and deallocates
	// and deletes them when the pod is gone.
	DRA bool
	// Workloads adds to kube-controller-manager the controllers of the
	// workload APIs (workloadControllers), which Kueue's batch/job
	// integration and its users need. They are off unless asked for: they
	// watch every pod, which load tests and benchmarks would pay for.
	Workloads bool
	// Gangs turns on Kubernetes' Workload API (the GenericWorkload feature
	// gate and scheduling.k8s.io/v1beta1) in kube-apiserver,
	// kube-controller-manager and every scheduler started through the
	// control plane, so that a PodGroup's pods are scheduled all or
	// nothing.
	Gangs bool
	// APIServerFlags are extra kube-apiserver flags, such as
	// "--admission-control-config-file=...".
	APIServerFlags []string
	// APIServerEnv are extra environment variables (KEY=value) for
	// kube-apiserver, such as GOGC.
	APIServerEnv []string
	// Dir holds certificates, data and logs. A temporary directory is used
	// when it is empty.
	Dir string
}

// ControlPlane is a running control plane and clients for it.
type ControlPlane struct {
	// Config is an admin client configuration with raised rate limits.
	Config *rest.Config
	// KubeconfigPath is a kubeconfig file for Config, for kubectl and the
	// control-plane binaries.
	KubeconfigPath string
	// Dir holds certificates, etcd data and one log per process.
	Dir string
	// Kube and Tessera are clients built from Config.
	Kube    kubernetes.Interface
	Tessera versioned.Interface

	bin   string
	pki   *pki
	procs []*Process
	// apiServer is the running kube-apiserver, and apiServerArgs and
	// apiServerEnv its flags and environment, kept so that
	// RestartAPIServer starts it again the same way.
	apiServer     *Process
	apiServerArgs []string
	apiServerEnv  []string
	apiServerRuns int
	// gangs is Options.Gangs: schedulers get the feature gate too.
	gangs bool
}

// Start runs a control plane for the test and stops it when the test ends.
// A missing binary fails the test; it never skips.
func Start(t testing.TB, opts Options) *ControlPlane {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cp, err := StartControlPlane(ctx, opts)
	if cp != nil {
		t.Cleanup(func() {
			if t.Failed() {
				cp.logTails(t)
				cp.keepLogs(t)
			}
			cp.Stop()
		})
	}
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	return cp
}

// StartControlPlane runs etcd and kube-apiserver (and, if asked,
// kube-controller-manager), installs Tessera's CRDs and waits until they are
// served. On error the returned control plane, if not nil, must be stopped.
func StartControlPlane(ctx context.Context, opts Options) (*ControlPlane, error) {
	bin, err := binDir()
	if err != nil {
		return nil, err
	}
	if opts.Dir == "" {
		if opts.Dir, err = os.MkdirTemp("", "tessera-controlplane-"); err != nil {
			return nil, err
		}
	}
	// Every path written into a kubeconfig or a configuration file must
	// hold from any working directory: client-go resolves a relative
	// certificate path against the kubeconfig's own folder, not ours.
	if opts.Dir, err = filepath.Abs(opts.Dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, err
	}
	cp := &ControlPlane{Dir: opts.Dir, bin: bin, gangs: opts.Gangs, apiServerEnv: opts.APIServerEnv}
	if cp.pki, err = newPKI(opts.Dir); err != nil {
		return nil, fmt.Errorf("creating certificates: %w", err)
	}
	etcdURL, err := cp.startEtcd()
	if err != nil {
		return cp, err
	}
	apiServerFlags := opts.APIServerFlags
	if opts.Gangs {
		apiServerFlags = append(gangsAPIServerFlags(), apiServerFlags...)
	}
	if err := cp.startAPIServer(ctx, etcdURL, apiServerFlags); err != nil {
		return cp, err
	}
	if err := cp.installCRDs(ctx); err != nil {
		return cp, err
	}
	if err := cp.createNamespaces(ctx); err != nil {
		return cp, err
	}
	if opts.ControllerManager {
		if err := cp.startControllerManager(opts); err != nil {
			return cp, err
		}
	}
	return cp, nil
}

// Stop ends every process, the last started first.
func (cp *ControlPlane) Stop() {
	for i := len(cp.procs) - 1; i >= 0; i-- {
		cp.procs[i].Stop()
	}
}

func (cp *ControlPlane) logTails(t testing.TB) {
	for _, p := range cp.procs {
		t.Logf("last lines of %s (%s):\n%s", p.name, p.logFile, p.LogTail(3000))
	}
}

func (cp *ControlPlane) start(name string, args ...string) (*Process, error) {
	return cp.startBinary(filepath.Join(cp.bin, name), name, args...)
}

// startBinary runs bin as the control plane's process called name.
func (cp *ControlPlane) startBinary(bin, name string, args ...string) (*Process, error) {
	p, err := StartProcess(cp.Dir, bin, name, args...)
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, p)
	return p, nil
}

// startAPIServerProcess runs kube-apiserver with its flags and
// environment as the control plane's process called name.
func (cp *ControlPlane) startAPIServerProcess(name string) (*Process, error) {
	p, err := StartProcessWithEnv(cp.Dir, filepath.Join(cp.bin, "kube-apiserver"), name, cp.apiServerEnv, cp.apiServerArgs...)
	if err != nil {
		return nil, err
	}
	cp.procs = append(cp.procs, p)
	return p, nil
}

func (cp *ControlPlane) startEtcd() (string, error) {
	clientPort, err := FreePort()
	if err != nil {
		return "", err
	}
	peerPort, err := FreePort()
	if err != nil {
		return "", err
	}
	clientURL := "http://127.0.0.1:" + strconv.Itoa(clientPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	_, err = cp.start("etcd",
		"--name=default",
		"--data-dir="+filepath.Join(cp.Dir, "etcd"),
		"--listen-client-urls="+clientURL,
		"--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL,
		"--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL,
		// Test data need not survive a power cut; fsync dominates otherwise.
		"--unsafe-no-fsync",
		// The 5,000-node backlog keeps 240,000 pods and their allocations or
		// claims, with their history until kube-apiserver compacts it:
		// room past the default 2 GiB, up to etcd's suggested maximum.
		"--quota-backend-bytes=8589934592",
		"--log-level=warn",
	)
	return clientURL, err
}

func (cp *ControlPlane) startAPIServer(ctx context.Context, etcdURL string, extra []string) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	args := []string{
		"--etcd-servers=" + etcdURL,
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		// The loopback address cannot back the kubernetes Service endpoints.
		"--endpoint-reconciler-type=none",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + cp.pki.servingCertFile,
		"--tls-private-key-file=" + cp.pki.servingKeyFile,
		"--client-ca-file=" + cp.pki.caFile,
		"--service-account-key-file=" + cp.pki.serviceAccountKF,
		"--service-account-signing-key-file=" + cp.pki.serviceAccountKF,
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-cluster-ip-range=10.96.0.0/16",
		"--authorization-mode=RBAC",
		"--allow-privileged=true",
		// Pods are created before any service account controller may run.
		"--disable-admission-plugins=ServiceAccount",
		// Load tests must measure Tessera, not the server's fairness queues.
		"--enable-priority-and-fairness=false",
		"--max-requests-inflight=2000",
		"--max-mutating-requests-inflight=1000",
	}
	cp.apiServerArgs = append(args, extra...)
	if cp.apiServer, err = cp.startAPIServerProcess("kube-apiserver"); err != nil {
		return err
	}
	host := "https://127.0.0.1:" + strconv.Itoa(port)
	if err := cp.writeKubeconfig(host); err != nil {
		return err
	}
	return cp.waitHealthy(ctx, "kube-apiserver", "/readyz")
}

func (cp *ControlPlane) writeKubeconfig(host string) error {
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["tessera"] = &clientcmdapi.Cluster{Server: host, CertificateAuthority: cp.pki.caFile}
	kubeconfig.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
		ClientCertificate: cp.pki.adminCertFile,
		ClientKey:         cp.pki.adminKeyFile,
	}
	kubeconfig.Contexts["tessera"] = &clientcmdapi.Context{Cluster: "tessera", AuthInfo: "admin"}
	kubeconfig.CurrentContext = "tessera"
	cp.KubeconfigPath = filepath.Join(cp.Dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig, cp.KubeconfigPath); err != nil {
		return fmt.Errorf("writing kubeconfig: %w", err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", cp.KubeconfigPath)
	if err != nil {
		return err
	}
	config.QPS, config.Burst = 1000, 2000
	cp.Config = config
	if cp.Kube, err = kubernetes.NewForConfig(config); err != nil {
		return err
	}
	cp.Tessera, err = versioned.NewForConfig(config)
	return err
}

// waitHealthy polls the API server's health path until it answers ok, the
// context ends, or a process of the control plane exits.
func (cp *ControlPlane) waitHealthy(ctx context.Context, what, path string) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		for _, p := range cp.procs {
			if exited, err := p.Exited(); exited {
				return false, fmt.Errorf("%s exited (%v); last lines of %s:\n%s", p.name, err, p.logFile, p.LogTail(3000))
			}
		}
		body, err := cp.Kube.Discovery().RESTClient().Get().AbsPath(path).DoRaw(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return string(body) == "ok", nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s to become ready: %w", what, errors.Join(err, last))
	}
	return nil
}

// workloadControllers are the kube-controller-manager controllers that
// Options.Workloads adds: Jobs and CronJobs (which Kueue suspends and
// resumes), Deployments, ReplicaSets and StatefulSets (which otherwise
// create no pods), PodDisruptionBudgets (which otherwise never allow a
// disruption), finished Jobs' time to live, the pod garbage collector, and
// the persistent-volume binder (without which no PersistentVolumeClaim
// binds, and no pod that mounts one is scheduled).
const workloadControllers = "job-controller,cronjob-controller,deployment-controller,replicaset-controller," +
	"statefulset-controller,disruption-controller,ttl-after-finished-controller,pod-garbage-collector-controller," +
	"persistentvolume-binder-controller"

func (cp *ControlPlane) startControllerManager(opts Options) error {
	port, err := FreePort()
	if err != nil {
		return err
	}
	controllers := "garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller," +
		"root-ca-certificate-publisher-controller,resourcequota-controller"
	if opts.DRA {
		controllers += ",resourceclaim-controller"
	}
	if opts.Workloads {
		controllers += "," + workloadControllers
	}
	if opts.Gangs {
		controllers += "," + gangsController
	}
	args := []string{
		"--kubeconfig=" + cp.KubeconfigPath,
		"--authentication-kubeconfig=" + cp.KubeconfigPath,
		"--authorization-kubeconfig=" + cp.KubeconfigPath,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--leader-elect=false",
		"--controllers=" + controllers,
		"--service-account-private-key-file=" + cp.pki.serviceAccountKF,
		"--root-ca-file=" + cp.pki.caFile,
		"--use-service-account-credentials=false",
		"--kube-api-qps=500",
		"--kube-api-burst=1000",
	}
	if opts.Gangs {
		args = append(args, gangsFeatureGates)
	}
	_, err = cp.start("kube-controller-manager", args...)
	return err
}
