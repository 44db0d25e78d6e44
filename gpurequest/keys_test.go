package gpurequest

import (
	"reflect"
	"testing"
)

// TestAnnotationKeysCoverParsing pins that trimming a pod to AnnotationKeys
// keeps everything ParseAnnotations reads, for every key and alias.
func TestAnnotationKeysCoverParsing(t *testing.T) {
	values := map[string]string{
		AnnotationGPUType:        "a100",
		AnnotationGPUTypeExclude: "t4",
		AnnotationGPUUUID:        "GPU-1",
		AnnotationGPUUUIDExclude: "GPU-2",
		AnnotationNodePolicy:     "spread",
		AnnotationGPUPolicy:      "binpack",
		AnnotationNUMABind:       "true",
	}
	for key, value := range values {
		for _, name := range []string{key, annotationAliases[key]} {
			t.Run(name, func(t *testing.T) {
				full := map[string]string{name: value, "unrelated.example.com/x": "y"}
				trimmed := map[string]string{}
				for _, k := range AnnotationKeys() {
					if v, ok := full[k]; ok {
						trimmed[k] = v
					}
				}
				want, err := ParseAnnotations(full)
				if err != nil {
					t.Fatal(err)
				}
				got, err := ParseAnnotations(trimmed)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, want) || reflect.DeepEqual(got, Selection{}) {
					t.Fatalf("trimmed annotations parse to %+v, want %+v", got, want)
				}
			})
		}
	}
}
