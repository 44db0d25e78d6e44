// Package podproc finds the pod a process belongs to, through the cgroup
// the kubelet put its container in (/proc/<pid>/cgroup). It reads the
// cgroup paths of both cgroup drivers: cgroupfs
// (/kubepods/burstable/pod<uid>/<container>) and systemd
// (/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid with
// underscores>.slice/...).
package podproc

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
)

// podSegment matches the pod part of a cgroup path.
var podSegment = regexp.MustCompile(`(?:^|[/-])pod([0-9a-f]{8}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{4}[-_][0-9a-f]{12})(?:\.slice)?(?:/|$)`)

// Resolver maps process IDs to pod UIDs.
type Resolver struct {
	// ProcRoot is the proc file system of the processes' PID namespace.
	ProcRoot string
}

// ErrNoProcess says that the process has exited.
var ErrNoProcess = errors.New("no such process")

// PodUID returns the UID of the pod running the process, or "" for a
// process outside any pod.
func (r Resolver) PodUID(pid uint32) (types.UID, error) {
	data, err := os.ReadFile(filepath.Join(r.ProcRoot, strconv.FormatUint(uint64(pid), 10), "cgroup"))
	if errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("process %d: %w", pid, ErrNoProcess)
	}
	if err != nil {
		return "", fmt.Errorf("reading the cgroup of process %d: %w", pid, err)
	}
	return ParseCgroup(data), nil
}

// ParseCgroup returns the pod UID in the content of a /proc/<pid>/cgroup
// file, or "" when the process is not in a pod.
func ParseCgroup(content []byte) types.UID {
	s := bufio.NewScanner(bytes.NewReader(content))
	for s.Scan() {
		// hierarchy-ID:controllers:path
		parts := strings.SplitN(s.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		if m := podSegment.FindStringSubmatch(parts[2]); m != nil {
			return types.UID(strings.ReplaceAll(m[1], "_", "-"))
		}
	}
	return ""
}
