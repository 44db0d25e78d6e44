package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/yaml"
)

// installCRDs creates the CRDs of deploy/crds, as shipped, and waits until
// the API server serves them.
func (cp *ControlPlane) installCRDs(ctx context.Context) error {
	client, err := apiextensionsclient.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(RepoRoot(), "deploy", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no CRD manifests in deploy/crds (%v)", err)
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.UnmarshalStrict(data, crd); err != nil {
			return fmt.Errorf("decoding %s: %w", file, err)
		}
		if err := createCRD(ctx, client, crd); err != nil {
			return err
		}
	}
	return waitDiscovery(ctx, cp.Tessera.Discovery(), "gpu.tessera.dev/v1alpha1")
}

// createCRD creates crd and waits until it is established.
func createCRD(ctx context.Context, client apiextensionsclient.Interface, crd *apiextensionsv1.CustomResourceDefinition) error {
	if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating CRD %s: %w", crd.Name, err)
	}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for CRD %s to be established: %w", crd.Name, err)
	}
	return nil
}

// waitDiscovery waits until discovery lists groupVersion: it lags
// establishment by a moment, and clients that resolve resources through it
// (kubectl, the garbage collector) need it.
func waitDiscovery(ctx context.Context, client discovery.DiscoveryInterface, groupVersion string) error {
	return wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := client.ServerResourcesForGroupVersion(groupVersion)
		return err == nil, nil
	})
}
