package helm

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tessera-gpu/tessera/test/framework"
)

// stampedKubeconfig returns a kubeconfig for Helm that reaches the control
// plane through a local proxy answering /version with the pinned
// Kubernetes version. hack/build-controlplane.sh builds kube-apiserver
// without the release's version stamp, so it reports v0.0.0-master, which
// fails every chart's kubeVersion constraint; a stamped build passes
// through unchanged.
func stampedKubeconfig(t testing.TB, cp *framework.ControlPlane) string {
	t.Helper()
	pinned := pinnedKubernetesVersion(t)
	transport, err := rest.TransportFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cp.Config.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = transport
	proxy.FlushInterval = -1 // stream watches
	mux := http.NewServeMux()
	mux.Handle("/", proxy)
	mux.HandleFunc("/version", func(w http.ResponseWriter, r *http.Request) {
		v, err := cp.Kube.Discovery().ServerVersion()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		if strings.HasPrefix(v.GitVersion, "v0.0.0") {
			parts := strings.SplitN(strings.TrimPrefix(pinned, "v"), ".", 3)
			v.GitVersion, v.Major, v.Minor = pinned, parts[0], parts[1]
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	})
	server := httptest.NewServer(mux)
	t.Cleanup(server.Close)

	config := clientcmdapi.NewConfig()
	config.Clusters["proxy"] = &clientcmdapi.Cluster{Server: server.URL}
	config.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{}
	config.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	config.CurrentContext = "proxy"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// pinnedKubernetesVersion reads the Kubernetes version the control plane
// is built from.
func pinnedKubernetesVersion(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(framework.RepoRoot(), "hack", "controlplane", "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*(?:require\s+)?k8s\.io/kubernetes (v[0-9]+\.[0-9]+\.[0-9]+)\s*$`).FindSubmatch(data)
	if m == nil {
		t.Fatal("hack/controlplane/go.mod does not require k8s.io/kubernetes")
	}
	return string(m[1])
}
