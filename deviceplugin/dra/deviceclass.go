package dra

import (
	"fmt"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// DeviceClass is the class through which claims ask for Tessera's GPUs:
// every device of gpuv1alpha1.DRADriverName. The chart creates the same one in DRA mode
// (deploy/helm/tessera/templates/deviceclasses.yaml); local-up and the
// benchmark create it from here.
func DeviceClass() *resourceapi.DeviceClass {
	return &resourceapi.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: gpuv1alpha1.DRADriverName},
		Spec: resourceapi.DeviceClassSpec{Selectors: []resourceapi.DeviceSelector{{
			CEL: &resourceapi.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", gpuv1alpha1.DRADriverName)},
		}}},
	}
}
