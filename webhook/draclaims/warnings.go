package draclaims

import (
	"fmt"

	"github.com/tessera-gpu/tessera/gpurequest"
)

// Warnings says which of the pod's annotations DRA mode cannot honour.
func Warnings(sel gpurequest.Selection) []string {
	var out []string
	for _, p := range []struct {
		key    string
		policy gpurequest.Policy
	}{{gpurequest.AnnotationNodePolicy, sel.NodePolicy}, {gpurequest.AnnotationGPUPolicy, sel.GPUPolicy}} {
		if p.policy != "" {
			out = append(out, fmt.Sprintf("%s=%s has no effect in DRA mode: kube-scheduler allocates GPUs first fit and scores no devices", p.key, p.policy))
		}
	}
	return out
}
