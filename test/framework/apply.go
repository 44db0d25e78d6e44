package framework

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// yamlDocuments splits a multi-document YAML file; empty documents are
// dropped.
func yamlDocuments(data []byte) ([][]byte, error) {
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(doc)) > 0 {
			docs = append(docs, doc)
		}
	}
}

// ApplyManifests creates every object in files, in order, as kubectl
// create -f would: of any kind the API server serves, CRDs' included.
// Objects of a namespaced kind with no namespace go in "default".
func ApplyManifests(ctx context.Context, config *rest.Config, files ...string) error {
	client, err := dynamic.NewForConfig(config)
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			return err
		}
		docs, err := yamlDocuments(data)
		if err != nil {
			return fmt.Errorf("reading %s: %w", file, err)
		}
		for _, doc := range docs {
			obj := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
				return fmt.Errorf("decoding %s: %w", file, err)
			}
			gvk := obj.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("%s: %s %s: %w", file, gvk.Kind, obj.GetName(), err)
			}
			resource := client.Resource(mapping.Resource)
			var target dynamic.ResourceInterface = resource
			if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
				if obj.GetNamespace() == "" {
					obj.SetNamespace(metav1.NamespaceDefault)
				}
				target = resource.Namespace(obj.GetNamespace())
			}
			if _, err := target.Create(ctx, obj, metav1.CreateOptions{FieldManager: "tessera-test"}); err != nil {
				return fmt.Errorf("%s: creating %s %s: %w", file, gvk.Kind, obj.GetName(), err)
			}
		}
	}
	return nil
}
