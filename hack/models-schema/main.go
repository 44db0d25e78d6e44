// Command models-schema prints the OpenAPI v2 document of Tessera's API
// types, as generated into generated/openapi, for applyconfiguration-gen's
// --openapi-schema. With it the apply configurations carry the types'
// structured-merge schema, which the fake clientset needs to create and
// apply GPUNodes and GPUAllocations, and which the Extract helpers of a
// server-side-apply loop need. hack/update-codegen.sh runs it.
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/tessera-gpu/tessera/generated/openapi"
)

func main() {
	if err := json.NewEncoder(os.Stdout).Encode(document()); err != nil {
		fmt.Fprintln(os.Stderr, "models-schema:", err)
		os.Exit(1)
	}
}

// document returns every generated definition under the name
// applyconfiguration-gen looks it up by, with references to match.
func document() *spec.Swagger {
	defs := openapi.GetOpenAPIDefinitions(func(name string) spec.Ref {
		return spec.MustCreateRef("#/definitions/" + modelName(name))
	})
	schemas := make(spec.Definitions, len(defs))
	for name, def := range defs {
		schema := def.Schema
		// A type whose v3 schema cannot be said in v2 (a oneOf) embeds
		// its v2 form; the structured-merge schema is read as v2.
		if v2, ok := schema.Extensions[common.ExtensionV2Schema].(spec.Schema); ok {
			schema = v2
		}
		schemas[modelName(name)] = schema
	}
	return &spec.Swagger{SwaggerProps: spec.SwaggerProps{
		Swagger:     "2.0",
		Info:        &spec.Info{InfoProps: spec.InfoProps{Title: "Tessera", Version: "v1alpha1"}},
		Definitions: schemas,
	}}
}

// modelName is the OpenAPI name of a definition. Kubernetes' own types are
// keyed by their model names already (io.k8s.apimachinery...); Tessera's by
// Go import path, which applyconfiguration-gen turns into the same
// reversed-domain form.
func modelName(name string) string {
	if !strings.Contains(name, "/") {
		return name
	}
	return util.ToRESTFriendlyName(name)
}
