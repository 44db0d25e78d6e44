package dra

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"tags.cncf.io/container-device-interface/pkg/cdi"
	"tags.cncf.io/container-device-interface/pkg/parser"
	cdispecs "tags.cncf.io/container-device-interface/specs-go"

	"github.com/tessera-gpu/tessera/deviceplugin/cdispec"
	"github.com/tessera-gpu/tessera/deviceplugin/hamicore"
)

// CDIVendor and CDIClass make the kind of the claims' CDI devices,
// tessera.dev/claim.
const (
	CDIVendor = "tessera.dev"
	CDIClass  = "claim"
)

// mountOptions keep the library read-only and inert in the container.
var mountOptions = []string{"ro", "nosuid", "nodev", "bind"}

// cdiWriter writes one CDI spec per prepared request into the runtime's
// spec directory.
type cdiWriter struct {
	cache          *cdi.Cache
	dir            string
	library        hamicore.Library
	oversubscribed bool
	gpuDevices     bool
}

func newCDIWriter(dir string, library hamicore.Library, oversubscribed, gpuDevices bool) (*cdiWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the CDI spec directory: %w", err)
	}
	cache, err := cdi.NewCache(cdi.WithSpecDirs(dir), cdi.WithAutoRefresh(false))
	if err != nil {
		return nil, fmt.Errorf("opening the CDI spec directory %s: %w", dir, err)
	}
	return &cdiWriter{cache: cache, dir: dir, library: library, oversubscribed: oversubscribed, gpuDevices: gpuDevices}, nil
}

// requestID is the unique part of a request's CDI names. The claim UID
// keeps a name from being reused, so a runtime never finds a stale spec in
// its cache; a subrequest's slash is not allowed in CDI names.
func requestID(claim types.UID, request string) string {
	return string(claim) + "_" + strings.ReplaceAll(request, "/", "_")
}

// write writes the spec of one request: a CDI device whose edits give the
// container the request's GPUs and their HAMi-core limits, in the order of
// the shares. It returns the CDI devices of the request: that one, and
// with the cdi device-list strategy each GPU's device of the node's spec
// (cdispec), which then carries the GPUs in place of
// NVIDIA_VISIBLE_DEVICES.
func (w *cdiWriter) write(claim types.UID, request string, shares []hamicore.Share) (devices []string, specName string, err error) {
	id := requestID(claim, request)
	if err := parser.ValidateDeviceName(id); err != nil {
		return nil, "", fmt.Errorf("request %q of claim %s cannot be a CDI device: %w", request, claim, err)
	}
	env := hamicore.Env(shares, filepath.Join("/tmp", "tessera-vgpu-"+id+".cache"), w.oversubscribed)
	devices = []string{parser.QualifiedName(CDIVendor, CDIClass, id)}
	if w.gpuDevices {
		env[hamicore.EnvVisibleDevices] = hamicore.NoVisibleDevices
		for _, s := range shares {
			devices = append(devices, cdispec.DeviceName(s.UUID))
		}
	}
	edits := cdispecs.ContainerEdits{}
	for k, v := range env {
		edits.Env = append(edits.Env, k+"="+v)
	}
	slices.Sort(edits.Env)
	for _, m := range w.library.Mounts() {
		edits.Mounts = append(edits.Mounts, &cdispecs.Mount{HostPath: m.HostPath, ContainerPath: m.ContainerPath, Options: slices.Clone(mountOptions)})
	}
	spec := &cdispecs.Spec{
		Kind:    CDIVendor + "/" + CDIClass,
		Devices: []cdispecs.Device{{Name: id, ContainerEdits: edits}},
	}
	if spec.Version, err = cdi.MinimumRequiredVersion(spec); err != nil {
		return nil, "", fmt.Errorf("choosing the CDI spec version: %w", err)
	}
	specName = cdi.GenerateTransientSpecName(CDIVendor, CDIClass, id) + ".json"
	if err := w.cache.WriteSpec(spec, specName); err != nil {
		return nil, "", fmt.Errorf("writing the CDI spec of request %q of claim %s: %w", request, claim, err)
	}
	// The library creates the file private to its owner; the runtime reads
	// it as root, but a person checking the node should not need to.
	if err := os.Chmod(filepath.Join(w.dir, specName), 0o644); err != nil {
		return nil, "", fmt.Errorf("writing the CDI spec of request %q of claim %s: %w", request, claim, err)
	}
	return devices, specName, nil
}

// remove deletes a spec; a spec already gone is not an error.
func (w *cdiWriter) remove(specName string) error {
	if err := w.cache.RemoveSpec(specName); err != nil {
		return fmt.Errorf("removing the CDI spec %s: %w", specName, err)
	}
	return nil
}
