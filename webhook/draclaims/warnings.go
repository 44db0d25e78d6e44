package draclaims

import (
	"fmt"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// Warnings says which of the pod's annotations DRA mode may not honour:
// the node policy holds where tessera-scheduler schedules (its TesseraDRA
// score), not under stock kube-scheduler, which the webhook cannot tell
// apart; the GPU policy never, since kube-scheduler's allocator takes the
// first GPU of the node that fits. Each names the key the pod wrote in
// annotations, Tessera's or HAMi's.
func Warnings(annotations map[string]string, sel gpurequest.Selection) []string {
	var out []string
	if sel.NodePolicy != "" {
		out = append(out, fmt.Sprintf("%s=%s holds in DRA mode only where tessera-scheduler schedules the pod: stock kube-scheduler scores no devices",
			gpurequest.WrittenKey(annotations, gpurequest.AnnotationNodePolicy), sel.NodePolicy))
	}
	if sel.GPUPolicy != "" {
		out = append(out, fmt.Sprintf("%s=%s has no effect in DRA mode: kube-scheduler allocates the first GPU of the node that fits",
			gpurequest.WrittenKey(annotations, gpurequest.AnnotationGPUPolicy), sel.GPUPolicy))
	}
	return out
}
