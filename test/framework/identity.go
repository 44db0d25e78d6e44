package framework

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// NewUserKubeconfig issues a client certificate for the user name in the
// groups and writes a kubeconfig for it beside the admin one. A component
// given its own user can be told apart at the API server, for instance by
// an audit policy that logs only that user's requests. The returned
// configuration has the same raised rate limits as Config.
func (cp *ControlPlane) NewUserKubeconfig(user string, groups []string) (string, *rest.Config, error) {
	certFile, keyFile, err := cp.pki.issue(cp.Dir, "user-"+user,
		pkix.Name{CommonName: user, Organization: groups}, x509.ExtKeyUsageClientAuth)
	if err != nil {
		return "", nil, err
	}
	host := cp.Config.Host
	kubeconfig := clientcmdapi.NewConfig()
	kubeconfig.Clusters["tessera"] = &clientcmdapi.Cluster{Server: host, CertificateAuthority: cp.pki.caFile}
	kubeconfig.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificate: certFile, ClientKey: keyFile}
	kubeconfig.Contexts["tessera"] = &clientcmdapi.Context{Cluster: "tessera", AuthInfo: user}
	kubeconfig.CurrentContext = "tessera"
	path := filepath.Join(cp.Dir, "kubeconfig-"+user)
	if err := clientcmd.WriteToFile(*kubeconfig, path); err != nil {
		return "", nil, fmt.Errorf("writing kubeconfig for user %s: %w", user, err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return "", nil, fmt.Errorf("loading kubeconfig for user %s: %w", user, err)
	}
	config.QPS, config.Burst = cp.Config.QPS, cp.Config.Burst
	return path, config, nil
}
