package quota

var _ Source = Fixed(nil)

// Fixed is a Source of limits set per namespace, for tests and tools that
// read no ResourceQuotas.
type Fixed map[string]Limits

// Limits returns the namespace's limits, none when it has no entry.
func (f Fixed) Limits(namespace string) Limits { return f[namespace] }

// All returns the limits of every namespace that has any.
func (f Fixed) All() map[string]Limits {
	out := make(map[string]Limits, len(f))
	for ns, l := range f {
		if l.Enforced() {
			out[ns] = l
		}
	}
	return out
}
