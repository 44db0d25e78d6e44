package placement

import (
	"fmt"
	"strings"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// Reason is why one GPU does not fit a request.
type Reason uint8

// Reasons, in the order a GPU is checked: the first that applies is counted.
const (
	// ReasonUnhealthy: the GPU reported an error.
	ReasonUnhealthy Reason = iota
	// ReasonCordoned: the administrator cordoned the GPU.
	ReasonCordoned
	// ReasonTypeMismatch: the model is not among the pod's types, or is
	// among its excluded types.
	ReasonTypeMismatch
	// ReasonUUIDExcluded: the UUID is not among the pod's UUIDs, or is
	// among its excluded UUIDs.
	ReasonUUIDExcluded
	// ReasonMIGProfile: the pod asks for MIG instances, of a profile or of
	// any, and the GPU is none of them.
	ReasonMIGProfile
	// ReasonMIGCount: the GPU is a MIG instance and the container asks for
	// more than one GPU; CUDA uses one MIG instance per process.
	ReasonMIGCount
	// ReasonMIGOnly: the GPU makes MIG instances on demand and the pod
	// does not ask for MIG instances.
	ReasonMIGOnly
	// ReasonMIGRoom: the GPU makes MIG instances on demand and no run of
	// its memory slices is free for the profile the container needs.
	ReasonMIGRoom
	// ReasonExclusiveTaken: the container asks for the GPU alone and
	// someone else uses it.
	ReasonExclusiveTaken
	// ReasonShareLimit: the GPU has as many users as it may share.
	ReasonShareLimit
	// ReasonMemory: not enough free memory.
	ReasonMemory
	// ReasonCores: not enough free cores, or all cores are taken.
	ReasonCores
	// ReasonNUMA: the GPU fits, but too few GPUs on its NUMA node do.
	ReasonNUMA

	// NumReasons is the number of reasons.
	NumReasons
)

var reasonText = [NumReasons]string{
	ReasonUnhealthy:      "unhealthy",
	ReasonCordoned:       "cordoned",
	ReasonTypeMismatch:   "type mismatch",
	ReasonUUIDExcluded:   "excluded by UUID",
	ReasonMIGProfile:     "not a MIG instance",
	ReasonMIGCount:       "MIG instance, more than one GPU asked",
	ReasonMIGOnly:        "in MIG mode, and the pod does not ask for MIG (nvidia.com/vgpu-mode: mig)",
	ReasonMIGRoom:        "no room for the MIG instance",
	ReasonExclusiveTaken: "in use, exclusive use asked",
	ReasonShareLimit:     "share limit reached",
	ReasonMemory:         "not enough memory",
	ReasonCores:          "not enough cores",
	ReasonNUMA:           "too few on one NUMA node",
}

// String is the reason as the failure message words it.
func (r Reason) String() string {
	if r < NumReasons {
		return reasonText[r]
	}
	return fmt.Sprintf("Reason(%d)", uint8(r))
}

// Detail is what a Failure adds to the per-GPU counts.
type Detail uint8

const (
	// DetailNone: the per-GPU counts say it all.
	DetailNone Detail = iota
	// DetailTooFew: a container needs more GPUs than fit it (Needed).
	DetailTooFew
	// DetailTogether: every container fits on its own, but not all of them
	// at once.
	DetailTogether
	// DetailSearchLimit: the exact search for a placement gave up after
	// MaxSearchSteps steps without an answer.
	DetailSearchLimit
	// DetailTooManyDevices: the node has more than MaxDevices GPUs.
	DetailTooManyDevices
	// DetailInvalidRequest: the request is out of the limits NewRequest checks.
	DetailInvalidRequest
)

// MaxNamed is the most GPUs a Failure names.
const MaxNamed = 4

// Named is one GPU that the pod selected by UUID and that does not fit it,
// with what a person needs to know to act on it.
type Named struct {
	// UUID and Index identify the GPU.
	UUID  string
	Index int32
	// Reason is the first rule the GPU breaks.
	Reason Reason
	// Whole is set when one container of another pod holds the GPU
	// alone: all its memory or all its compute.
	Whole bool
	// FreeMemoryMiB and MemoryMiB are the GPU's free and allocatable memory.
	FreeMemoryMiB, MemoryMiB int64
	// FreeCores is the compute not yet allocated, in percent of the GPU.
	FreeCores int32
	// ShareLimit is how many containers may share the GPU.
	ShareLimit int32
}

// Failure says why a node does not fit a request. It is a plain value so
// that filtering allocates nothing; Error formats it only when asked.
type Failure struct {
	// Total is the number of GPUs on the node; when Selected, the number
	// of them the pod selected.
	Total int32
	// Fit is the number of those GPUs that fit each of the pod's
	// containers on its own, NUMA binding included.
	Fit int32
	// Counts holds, for each reason, the number of those GPUs that fail
	// for it.
	Counts [NumReasons]int32
	// Detail is what the counts do not say.
	Detail Detail
	// Needed is, with DetailTooFew, the GPUs the container needs; the
	// message names it when it is more than one.
	Needed int32
	// Unresolvable is true when the node could never fit the request, even
	// with every pod on it gone: freeing GPUs (preemption) does not help.
	Unresolvable bool
	// Selected is set when the pod selected GPUs by UUID: the GPUs it did
	// not select are not counted, and the selected ones that do not fit
	// are named, the first MaxNamed of them in Named.
	Selected bool
	Named    [MaxNamed]Named
	// MIGProfiles are the MIG profiles the pod asks for, comma-separated,
	// which the words of ReasonMIGProfile name. A string, not a slice, so
	// that a Failure stays comparable.
	MIGProfiles string
}

// Error words the failure so that it reads well where kube-scheduler puts
// it: after the number of nodes that failed for the same reason, as in
// "0/3 nodes are available: 2 node(s) had 0/8 GPUs that fit (5 not enough
// memory, 3 share limit reached)". A pod that selected GPUs by UUID is
// told about each of them, as in "1 node(s) had 0/1 of the pod's selected
// GPUs that fit (GPU-a, index 0: held whole by another pod)".
func (f *Failure) Error() string { return f.Of("node(s)") }

// Of words the failure with subject for the node(s), such as "it" in
// "pod p no longer fits node n: it had 0/8 GPUs that fit (...)".
func (f *Failure) Of(subject string) string {
	switch f.Detail {
	case DetailTooManyDevices:
		return fmt.Sprintf("%s had %d GPUs, more than placement handles (%d)", subject, f.Total, MaxDevices)
	case DetailInvalidRequest:
		return subject + " could not be checked: the pod's GPU request is out of placement's limits"
	}
	if f.Selected && f.Total == 0 {
		return subject + " had none of the pod's selected GPUs"
	}
	var b strings.Builder
	if f.Selected {
		fmt.Fprintf(&b, "%s had %d/%d of the pod's selected GPUs that fit", subject, f.Fit, f.Total)
	} else {
		fmt.Fprintf(&b, "%s had %d/%d GPUs that fit", subject, f.Fit, f.Total)
	}
	if f.Detail == DetailTooFew && f.Needed > 1 {
		fmt.Fprintf(&b, ", %d needed", f.Needed)
	}
	if f.Selected {
		f.writeNamed(&b)
	} else {
		f.writeCounts(&b)
	}
	switch f.Detail {
	case DetailTogether:
		b.WriteString(", but not all the pod's containers at once")
	case DetailSearchLimit:
		b.WriteString(", but the search for a placement gave up")
	}
	return b.String()
}

// writeCounts writes the reasons by count, most first; ties in the order
// of the constants.
func (f *Failure) writeCounts(b *strings.Builder) {
	var order [NumReasons]Reason
	n := 0
	for r := range NumReasons {
		if f.Counts[r] == 0 {
			continue
		}
		i := n
		for ; i > 0 && f.Counts[order[i-1]] < f.Counts[r]; i-- {
			order[i] = order[i-1]
		}
		order[i] = r
		n++
	}
	for i, r := range order[:n] {
		sep := ", "
		if i == 0 {
			sep = " ("
		}
		fmt.Fprintf(b, "%s%d %s", sep, f.Counts[r], f.words(r))
	}
	if n > 0 {
		b.WriteByte(')')
	}
}

// words is the reason as the message words it: a GPU that is not of the
// pod's MIG profile is named by NVIDIA's resource name of the profile,
// such as "not a nvidia.com/mig-3g.20gb instance", which is what a pod
// that asks for one by that name wrote.
func (f *Failure) words(r Reason) string {
	if r != ReasonMIGProfile || f.MIGProfiles == "" {
		return r.String()
	}
	profiles := strings.Split(f.MIGProfiles, ",")
	names := make([]string, len(profiles))
	for i, p := range profiles {
		names[i] = string(gpurequest.MIGResourceName(p))
	}
	return "not a " + strings.Join(names, " or ") + " instance"
}

// writeNamed writes each named GPU and why it does not fit.
func (f *Failure) writeNamed(b *strings.Builder) {
	named := 0
	for i := range f.Named {
		g := &f.Named[i]
		if g.UUID == "" {
			break
		}
		sep := "; "
		if i == 0 {
			sep = " ("
		}
		why := g.why()
		if g.Reason == ReasonMIGProfile {
			why = f.words(g.Reason)
		}
		fmt.Fprintf(b, "%s%s, index %d: %s", sep, g.UUID, g.Index, why)
		named++
	}
	if more := f.Total - f.Fit - int32(named); more > 0 {
		fmt.Fprintf(b, "; %d more", more)
	}
	if named > 0 {
		b.WriteByte(')')
	}
}

// why says what keeps the GPU from the pod.
func (g *Named) why() string {
	switch {
	case g.Whole && (g.Reason == ReasonExclusiveTaken || g.Reason == ReasonShareLimit ||
		g.Reason == ReasonMemory || g.Reason == ReasonCores):
		return "held whole by another pod"
	case g.Reason == ReasonExclusiveTaken:
		return "in use by other pods, and the pod asks for it whole"
	case g.Reason == ReasonShareLimit:
		return fmt.Sprintf("shared by as many containers as it allows (%d)", g.ShareLimit)
	case g.Reason == ReasonMemory:
		return fmt.Sprintf("not enough memory, %d MiB free of %d", g.FreeMemoryMiB, g.MemoryMiB)
	case g.Reason == ReasonCores && g.FreeCores <= 0:
		return "its compute is fully allocated"
	case g.Reason == ReasonCores:
		return fmt.Sprintf("not enough compute, %d%% free", g.FreeCores)
	case g.Reason == ReasonUUIDExcluded:
		return "also excluded by the pod"
	case g.Reason == ReasonTypeMismatch:
		return "not of the pod's GPU type"
	case g.Reason == ReasonNUMA:
		return "too few of the pod's GPUs on its NUMA node"
	}
	return g.Reason.String()
}

// reset empties the failure for a node of total GPUs.
func (f *Failure) reset(total int) {
	*f = Failure{Total: int32(total)}
}
