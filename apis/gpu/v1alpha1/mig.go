package v1alpha1

// MaxMIGSlices is the most memory slices of a GPU in MIG mode, the
// bound of MIGPlacement (8 on every GPU that has MIG today).
const MaxMIGSlices = 16

// Slices returns the memory slices the placement takes, one bit each. A
// placement out of the API's bounds takes them all, so that it never
// fits beside another instance.
func (p MIGPlacement) Slices() uint16 {
	if p.Start < 0 || p.Size <= 0 || p.Start+p.Size > MaxMIGSlices {
		return ^uint16(0)
	}
	return (uint16(1)<<p.Size - 1) << p.Start
}
