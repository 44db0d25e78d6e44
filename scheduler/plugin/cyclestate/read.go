// Package cyclestate reads what a plugin of tessera-scheduler wrote into
// kube-scheduler's cycle state, with its own type.
package cyclestate

import (
	"fmt"

	fwk "k8s.io/kube-scheduler/framework"
)

// Read returns the data the plugin named key wrote into state, which
// must be a T.
func Read[T fwk.StateData](state fwk.CycleState, key fwk.StateKey) (T, error) {
	var zero T
	data, err := state.Read(key)
	if err != nil {
		return zero, fmt.Errorf("reading %s's cycle state: %w", key, err)
	}
	s, ok := data.(T)
	if !ok {
		return zero, fmt.Errorf("%s's cycle state is a %T", key, data)
	}
	return s, nil
}
