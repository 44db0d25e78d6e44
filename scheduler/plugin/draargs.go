package plugin

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// draGateArgs are the DRA fit gate's arguments in its pluginConfig entry.
type draGateArgs struct {
	// DeviceClasses are the DeviceClasses whose requests ask for
	// Tessera's GPUs, as TesseraDRA's argument of the same name; requests
	// of other classes are not the gate's to judge.
	DeviceClasses []string `json:"deviceClasses"`
}

// decodeDRAGateArgs reads the DRA fit gate's device classes, by default
// gpu.tessera.dev. Unknown fields are errors.
func decodeDRAGateArgs(obj runtime.Object) ([]string, error) {
	a := draGateArgs{DeviceClasses: []string{gpuv1alpha1.DRADriverName}}
	if obj != nil {
		u, ok := obj.(*runtime.Unknown)
		if !ok {
			return nil, fmt.Errorf("want arguments as YAML or JSON, got %T", obj)
		}
		if err := yaml.UnmarshalStrict(u.Raw, &a); err != nil {
			return nil, err
		}
	}
	if len(a.DeviceClasses) == 0 {
		return nil, errors.New("deviceClasses: name at least one DeviceClass")
	}
	return a.DeviceClasses, nil
}
