package dra

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/types"

	gpuv1alpha1 "github.com/tessera-gpu/tessera/apis/gpu/v1alpha1"
	"github.com/tessera-gpu/tessera/internal/atomicfile"
)

// checkpointVersion is the format of the checkpoint file; a file of
// another version is refused rather than misread.
const checkpointVersion = 1

// checkpoint is what the driver has prepared, kept on disk so that a
// restarted daemon answers the kubelet's repeated Prepare calls with what
// it prepared before, and can undo it on Unprepare when the claim itself
// is gone.
type checkpoint struct {
	Version int                          `json:"version"`
	Claims  map[types.UID]*preparedClaim `json:"claims"`
}

// preparedClaim is one prepared ResourceClaim.
type preparedClaim struct {
	Namespace string            `json:"namespace"`
	Name      string            `json:"name"`
	Requests  []preparedRequest `json:"requests"`
}

// preparedRequest is one request of a claim: its CDI devices and the GPU
// shares it holds, in allocation order (the container's device order).
type preparedRequest struct {
	// Request is the request's name, with the subrequest when there is one.
	Request string `json:"request"`
	// CDIDevices are the qualified CDI devices given to the containers
	// that use the request.
	CDIDevices []string `json:"cdiDevices"`
	// SpecName is the CDI spec file holding it.
	SpecName string           `json:"specName"`
	Devices  []preparedDevice `json:"devices"`
}

// preparedDevice is one GPU share of a request.
type preparedDevice struct {
	Pool     string     `json:"pool"`
	Device   string     `json:"device"`
	ShareID  *types.UID `json:"shareID,omitempty"`
	UUID     string     `json:"uuid"`
	MemoryMB int64      `json:"memoryMiB"`
	Cores    int64      `json:"cores"`
	Shares   int64      `json:"shares"`
	// MIG is the instance made for the share on a GPU whose instances are
	// made on demand, and Instance its MIG device UUID, which the
	// container gets in the GPU's stead.
	MIG      *gpuv1alpha1.MIGAllocation `json:"mig,omitempty"`
	Instance string                     `json:"instance,omitempty"`
}

// loadCheckpoint reads the file; a missing file is an empty checkpoint.
// What a save cut short by a crash left beside it is removed.
func loadCheckpoint(path string) (*checkpoint, error) {
	if _, err := atomicfile.RemoveStale(path); err != nil {
		return nil, fmt.Errorf("reading the DRA checkpoint: %w", err)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &checkpoint{Version: checkpointVersion, Claims: map[types.UID]*preparedClaim{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the DRA checkpoint: %w", err)
	}
	var c checkpoint
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("reading the DRA checkpoint %s: %w", path, err)
	}
	if c.Version != checkpointVersion {
		return nil, fmt.Errorf("the DRA checkpoint %s has version %d; this daemon reads version %d", path, c.Version, checkpointVersion)
	}
	if c.Claims == nil {
		c.Claims = map[types.UID]*preparedClaim{}
	}
	return &c, nil
}

// save replaces the file atomically and durably: after a crash it holds
// the old content or the new, never a part.
func (c *checkpoint) save(path string) error {
	data, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encoding the DRA checkpoint: %w", err)
	}
	if err := atomicfile.Write(path, data, 0o600, nil); err != nil {
		return fmt.Errorf("writing the DRA checkpoint: %w", err)
	}
	return nil
}
