package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// kueueWebhookNamePrefix is the prefix Kueue's release manifests give
// every object (config/default's namePrefix); its certificate management
// looks for the webhook configurations by these names.
const kueueWebhookNamePrefix = "kueue-"

// kueueWebhooks are Kueue's webhook configurations as its module ships
// them in config/components/webhook.
type kueueWebhooks struct {
	mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	validating *admissionregistrationv1.ValidatingWebhookConfiguration
}

// installKueueWebhooks registers the webhook configurations in dir, with
// the namespace selectors its kustomization patches in (so that pods in
// kube-system and kueue-system never wait for Kueue), named as Kueue's
// release names them and called through Kueue's Service on port.
func (cp *ControlPlane) installKueueWebhooks(ctx context.Context, dir string, port int32) error {
	w, err := readKueueWebhooks(filepath.Join(dir, "manifests.yaml"))
	if err != nil {
		return err
	}
	k, err := readKustomization(dir)
	if err != nil {
		return err
	}
	for _, patch := range k.Patches {
		if patch.Patch == "" {
			continue
		}
		if err := w.applySelectors([]byte(patch.Patch)); err != nil {
			return fmt.Errorf("applying a patch of %s: %w", filepath.Join(dir, "kustomization.yaml"), err)
		}
	}
	service := func(c *admissionregistrationv1.WebhookClientConfig) {
		var path *string
		if c.Service != nil {
			path = c.Service.Path
		}
		c.Service = &admissionregistrationv1.ServiceReference{Namespace: KueueNamespace, Name: kueueWebhookService, Port: ptr.To(port), Path: path}
	}
	w.mutating.Name = kueueWebhookNamePrefix + w.mutating.Name
	for i := range w.mutating.Webhooks {
		service(&w.mutating.Webhooks[i].ClientConfig)
	}
	w.validating.Name = kueueWebhookNamePrefix + w.validating.Name
	for i := range w.validating.Webhooks {
		service(&w.validating.Webhooks[i].ClientConfig)
	}
	admission := cp.Kube.AdmissionregistrationV1()
	if _, err := admission.MutatingWebhookConfigurations().Create(ctx, w.mutating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering Kueue's mutating webhooks: %w", err)
	}
	if _, err := admission.ValidatingWebhookConfigurations().Create(ctx, w.validating, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("registering Kueue's validating webhooks: %w", err)
	}
	return nil
}

func readKueueWebhooks(path string) (*kueueWebhooks, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	docs, err := yamlDocuments(data)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	w := &kueueWebhooks{}
	for _, doc := range docs {
		var meta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
		switch meta.Kind {
		case "MutatingWebhookConfiguration":
			w.mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			err = yaml.Unmarshal(doc, w.mutating)
		case "ValidatingWebhookConfiguration":
			w.validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			err = yaml.Unmarshal(doc, w.validating)
		}
		if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", path, err)
		}
	}
	if w.mutating == nil || w.validating == nil {
		return nil, fmt.Errorf("%s must hold a MutatingWebhookConfiguration and a ValidatingWebhookConfiguration", path)
	}
	return w, nil
}

// applySelectors copies the namespace selectors of a strategic-merge patch
// of either configuration onto the webhooks of the same name.
func (w *kueueWebhooks) applySelectors(patch []byte) error {
	var p struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
		Webhooks []struct {
			Name              string                `json:"name"`
			NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector"`
		} `json:"webhooks"`
	}
	if err := yaml.Unmarshal(patch, &p); err != nil {
		return err
	}
	for _, patched := range p.Webhooks {
		found := false
		switch {
		case p.Kind == "MutatingWebhookConfiguration" && p.Metadata.Name == w.mutating.Name:
			for i := range w.mutating.Webhooks {
				if w.mutating.Webhooks[i].Name == patched.Name {
					w.mutating.Webhooks[i].NamespaceSelector, found = patched.NamespaceSelector, true
				}
			}
		case p.Kind == "ValidatingWebhookConfiguration" && p.Metadata.Name == w.validating.Name:
			for i := range w.validating.Webhooks {
				if w.validating.Webhooks[i].Name == patched.Name {
					w.validating.Webhooks[i].NamespaceSelector, found = patched.NamespaceSelector, true
				}
			}
		}
		if !found {
			return fmt.Errorf("%s %s has no webhook %s", p.Kind, p.Metadata.Name, patched.Name)
		}
	}
	return nil
}

// waitKueueWebhooks waits until the API server calls Kueue's webhooks: a
// dry-run ResourceFlavor passes its mutating and validating webhooks only
// once the caBundle Kueue wrote is in the API server's informer.
func (cp *ControlPlane) waitKueueWebhooks(ctx context.Context) error {
	client, err := dynamic.NewForConfig(cp.Config)
	if err != nil {
		return err
	}
	flavors := client.Resource(KueueResource("resourceflavors"))
	probe := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kueue.x-k8s.io/v1beta2",
		"kind":       "ResourceFlavor",
		"metadata":   map[string]any{"name": "tessera-webhook-probe"},
	}}
	var last error
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, last = flavors.Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the API server to call Kueue's webhooks: %w (last: %v)", err, last)
	}
	return nil
}
