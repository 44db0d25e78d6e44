package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// kueueWebhookService is the Service that Kueue's webhook configurations
// and conversion webhooks name, and whose DNS name its self-made serving
// certificate carries (internalCertManagement.webhookServiceName).
const kueueWebhookService = "kueue-webhook-service"

// kueueWebhookSecret is the Secret where Kueue's certificate management
// keeps its CA and serving certificate (webhookSecretName). Kueue fills
// it but does not create it: its release ships it empty
// (config/components/internalcert).
const kueueWebhookSecret = "kueue-webhook-server-cert"

// kustomization is the part of a kustomization.yaml that says which
// manifests a Kueue component is made of and what is patched into them.
type kustomization struct {
	Resources []string `json:"resources"`
	Patches   []struct {
		Path  string `json:"path"`
		Patch string `json:"patch"`
	} `json:"patches"`
}

func readKustomization(dir string) (*kustomization, error) {
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	k := &kustomization{}
	if err := yaml.Unmarshal(data, k); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", filepath.Join(dir, "kustomization.yaml"), err)
	}
	return k, nil
}

// installKueue registers what Kueue's manager expects to find: its
// namespace, the empty Secret for its certificates, the Service its
// webhooks are called through, its CRDs and its webhook configurations,
// from config (the module's config/components).
//
// No kube-proxy runs here, so the Service is an ExternalName for
// localhost: the API server resolves a webhook's Service reference to the
// external name and the webhook's port, and checks the serving certificate
// against the Service's DNS name, which is the name Kueue's own
// certificate management writes into it.
func (cp *ControlPlane) installKueue(ctx context.Context, config string, port int32) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: KueueNamespace}}
	if _, err := cp.Kube.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating namespace %s: %w", KueueNamespace, err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: kueueWebhookSecret, Namespace: KueueNamespace}}
	if _, err := cp.Kube.CoreV1().Secrets(KueueNamespace).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Secret %s/%s: %w", KueueNamespace, kueueWebhookSecret, err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: kueueWebhookService, Namespace: KueueNamespace},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"},
	}
	if _, err := cp.Kube.CoreV1().Services(KueueNamespace).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating Service %s/%s: %w", KueueNamespace, kueueWebhookService, err)
	}
	if err := cp.installKueueCRDs(ctx, filepath.Join(config, "crd"), port); err != nil {
		return err
	}
	return cp.installKueueWebhooks(ctx, filepath.Join(config, "webhook"), port)
}

// installKueueCRDs creates the CRDs that the kustomization in dir lists,
// with the conversion webhooks its patches add, and waits until they are
// served.
func (cp *ControlPlane) installKueueCRDs(ctx context.Context, dir string, port int32) error {
	k, err := readKustomization(dir)
	if err != nil {
		return err
	}
	conversions := map[string]*apiextensionsv1.CustomResourceConversion{}
	for _, patch := range k.Patches {
		if patch.Path == "" {
			continue
		}
		crd, err := readCRD(filepath.Join(dir, patch.Path))
		if err != nil {
			return err
		}
		if c := crd.Spec.Conversion; c != nil && c.Webhook != nil && c.Webhook.ClientConfig != nil && c.Webhook.ClientConfig.Service != nil {
			c.Webhook.ClientConfig.Service = &apiextensionsv1.ServiceReference{
				Namespace: KueueNamespace, Name: kueueWebhookService, Port: ptr.To(port), Path: c.Webhook.ClientConfig.Service.Path,
			}
			conversions[crd.Name] = c
		}
	}
	client, err := apiextensionsclient.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	for _, resource := range k.Resources {
		crd, err := readCRD(filepath.Join(dir, resource))
		if err != nil {
			return err
		}
		if c, ok := conversions[crd.Name]; ok {
			crd.Spec.Conversion = c
		}
		if err := createCRD(ctx, client, crd); err != nil {
			return err
		}
	}
	return waitDiscovery(ctx, cp.Kube.Discovery(), "kueue.x-k8s.io/v1beta2")
}

func readCRD(path string) (*apiextensionsv1.CustomResourceDefinition, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := yaml.Unmarshal(data, crd); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", path, err)
	}
	return crd, nil
}
