package dra

import (
	"bytes"
	"encoding/json"
	"errors"
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
	dir            string
	library        hamicore.Library
	oversubscribed bool
	gpuDevices     bool
}

func newCDIWriter(dir string, library hamicore.Library, oversubscribed, gpuDevices bool) (*cdiWriter, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("creating the CDI spec directory: %w", err)
	}
	return &cdiWriter{dir: dir, library: library, oversubscribed: oversubscribed, gpuDevices: gpuDevices}, nil
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
	// A spec already on disk as it should be is left alone: the kubelet
	// prepares every claim again each time it restarts, and a rewrite
	// would make each runtime reload its CDI cache for nothing.
	if w.holds(specName, spec) {
		return devices, specName, nil
	}
	if err := cdispec.WriteFile(w.dir, specName, spec); err != nil {
		return nil, "", fmt.Errorf("request %q of claim %s: %w", request, claim, err)
	}
	return devices, specName, nil
}

// holds says whether the spec file already holds spec, byte for byte as
// cdispec.WriteFile writes a .json spec. Anything else, a file that is
// missing (the spec directory is usually a tmpfs that a reboot empties),
// unreadable or different, is written again.
func (w *cdiWriter) holds(specName string, spec *cdispecs.Spec) bool {
	want, err := json.Marshal(spec)
	if err != nil {
		return false
	}
	got, err := os.ReadFile(filepath.Join(w.dir, specName))
	return err == nil && bytes.Equal(got, want)
}

// remove deletes a spec file, or the temporary file of a write that did
// not finish; a file already gone is not an error.
func (w *cdiWriter) remove(specName string) error {
	if err := os.Remove(filepath.Join(w.dir, specName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("removing the CDI spec %s: %w", specName, err)
	}
	return nil
}

// specFiles lists the spec files the writer made for a claim, or with an
// empty claim for every claim: the names begin with the kind's transient
// prefix (tessera.dev-claim_) and the claim's UID. The temporary file of a
// write that a crash cut short is named after its spec, so it is listed
// too, and removed with the claim's specs.
func (w *cdiWriter) specFiles(claim types.UID) ([]string, error) {
	prefix := cdi.GenerateTransientSpecName(CDIVendor, CDIClass, "")
	if claim != "" {
		prefix = cdi.GenerateTransientSpecName(CDIVendor, CDIClass, requestID(claim, ""))
	}
	entries, err := os.ReadDir(w.dir)
	if err != nil {
		return nil, fmt.Errorf("listing the CDI spec directory: %w", err)
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// removeClaim deletes every spec file of a claim, found by name alone.
func (w *cdiWriter) removeClaim(claim types.UID) error {
	names, err := w.specFiles(claim)
	if err != nil {
		return err
	}
	var errs []error
	for _, name := range names {
		errs = append(errs, w.remove(name))
	}
	return errors.Join(errs...)
}
