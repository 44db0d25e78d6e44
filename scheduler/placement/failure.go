package placement

import (
	"fmt"
	"strings"
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
	ReasonUUIDExcluded:   "UUID excluded",
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

// Failure says why a node does not fit a request. It is a plain value so
// that filtering allocates nothing; Error formats it only when asked.
type Failure struct {
	// Total is the number of GPUs on the node.
	Total int32
	// Fit is the number of GPUs that fit each of the pod's containers on
	// its own, NUMA binding included.
	Fit int32
	// Counts holds, for each reason, the number of GPUs that fail for it.
	Counts [NumReasons]int32
	// Detail is what the counts do not say.
	Detail Detail
	// Needed is, with DetailTooFew, the GPUs the container needs; the
	// message names it when it is more than one.
	Needed int32
	// Unresolvable is true when the node could never fit the request, even
	// with every pod on it gone: freeing GPUs (preemption) does not help.
	Unresolvable bool
}

// Error words the failure for a person, such as
// "0/8 GPUs fit: 5 not enough memory, 3 share limit reached".
func (f *Failure) Error() string {
	var b strings.Builder
	switch f.Detail {
	case DetailTooManyDevices:
		return fmt.Sprintf("node has %d GPUs, placement handles at most %d", f.Total, MaxDevices)
	case DetailInvalidRequest:
		return "pod's GPU request is out of placement's limits"
	}
	fmt.Fprintf(&b, "%d/%d GPUs fit", f.Fit, f.Total)
	if f.Detail == DetailTooFew && f.Needed > 1 {
		fmt.Fprintf(&b, ", %d needed", f.Needed)
	}
	// Reasons by count, most first; ties in the order of the constants.
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
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%d %s", sep, f.Counts[r], r)
	}
	switch f.Detail {
	case DetailTogether:
		b.WriteString("; the pod's containers do not fit together")
	case DetailSearchLimit:
		b.WriteString("; the search for a placement gave up")
	}
	return b.String()
}

// reset empties the failure for a node of total GPUs.
func (f *Failure) reset(total int) {
	*f = Failure{Total: int32(total)}
}
