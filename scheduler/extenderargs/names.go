package extenderargs

import "strings"

// Names are the candidate nodes of one call, borrowed from its body: a name
// read with At, or the slice Borrow returns, is valid only until the call's
// Args is released. A name to be kept beyond that, as a map key, in an
// event, in a queue, must be taken with Keep, which copies it.
type Names struct{ s []string }

// Len is the number of names.
func (n Names) Len() int { return len(n.s) }

// At borrows the i-th name until the call's Args is released.
func (n Names) At(i int) string { return n.s[i] }

// Keep returns a copy of the i-th name, which may be kept.
func (n Names) Keep(i int) string { return strings.Clone(n.s[i]) }

// Borrow lends every name at once until the call's Args is released, for
// code that reads them within the call, such as view.Lookup, which keeps
// copies of its own, and the answer written before the call ends.
func (n Names) Borrow() []string { return n.s }
