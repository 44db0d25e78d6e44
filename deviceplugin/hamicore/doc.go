// Package hamicore says what a container needs so that HAMi-core enforces
// its share of each GPU: the variables the library reads and the mounts
// that load it. The device plugin's Allocate answers and the DRA driver's
// CDI specs are both built from it, so the two modes give a container the
// same limits.
package hamicore
