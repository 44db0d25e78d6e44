package nodestatus

import (
	"fmt"
	"os"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
)

// CheckHAMiCore returns the HAMiCoreReady condition for a library path:
// whether the HAMi-core library the plugin hands to containers is a file
// on the node. An empty path means none is configured.
func CheckHAMiCore(path string) Readiness {
	if path == "" {
		return Readiness{Reason: gpuv1alpha1.HAMiCoreNotConfigured,
			Message: "no HAMi-core library is configured (devicePlugin.libraryPath or hamiCore.image): GPU slices' memory and compute limits are not enforced"}
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return Readiness{Reason: gpuv1alpha1.HAMiCoreLibraryMissing,
			Message: fmt.Sprintf("the HAMi-core library %s is not on the node (%v): GPU slices' limits cannot be enforced; install it, or set the chart's devicePlugin.hamiCore.image", path, err)}
	case !fi.Mode().IsRegular() || fi.Size() == 0:
		return Readiness{Reason: gpuv1alpha1.HAMiCoreLibraryMissing,
			Message: fmt.Sprintf("the HAMi-core library %s is not a library file (mode %s, %d bytes): GPU slices' limits cannot be enforced", path, fi.Mode(), fi.Size())}
	}
	return Readiness{Ready: true, Reason: gpuv1alpha1.HAMiCoreInstalled, Message: "HAMi-core library " + path}
}
