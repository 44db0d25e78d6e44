package drascore

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/gpurequest"
)

// args are the plugin's arguments in its pluginConfig entry.
type args struct {
	// DefaultNodePolicy and DefaultGPUPolicy apply to pods without a policy
	// annotation, as the extender's fields of the same names.
	DefaultNodePolicy gpurequest.Policy `json:"defaultNodePolicy"`
	DefaultGPUPolicy  gpurequest.Policy `json:"defaultGPUPolicy"`
	// DeviceClasses are the DeviceClasses whose requests ask for
	// Tessera's GPUs; requests of other classes are not scored.
	DeviceClasses []string `json:"deviceClasses"`
}

// decodeArgs reads the plugin's arguments onto their defaults: binpack
// between nodes, spread within one, and the class gpu.tessera.dev. Unknown
// fields and unknown policies are errors.
func decodeArgs(obj runtime.Object) (*args, error) {
	a := &args{
		DefaultNodePolicy: gpurequest.Binpack,
		DefaultGPUPolicy:  gpurequest.Spread,
		DeviceClasses:     []string{gpuv1alpha1.DRADriverName},
	}
	if obj != nil {
		u, ok := obj.(*runtime.Unknown)
		if !ok {
			return nil, fmt.Errorf("want arguments as YAML or JSON, got %T", obj)
		}
		if err := yaml.UnmarshalStrict(u.Raw, a); err != nil {
			return nil, err
		}
	}
	if _, err := gpurequest.ParsePolicy(string(a.DefaultNodePolicy)); err != nil {
		return nil, fmt.Errorf("defaultNodePolicy: %w", err)
	}
	if _, err := gpurequest.ParsePolicy(string(a.DefaultGPUPolicy)); err != nil {
		return nil, fmt.Errorf("defaultGPUPolicy: %w", err)
	}
	if len(a.DeviceClasses) == 0 {
		return nil, fmt.Errorf("deviceClasses: name at least one DeviceClass")
	}
	return a, nil
}
