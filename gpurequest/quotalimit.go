package gpurequest

import (
	"math"

	"k8s.io/apimachinery/pkg/api/resource"
)

// QuotaLimit is the whole-number limit a ResourceQuota's hard value sets
// on a GPU quota resource, whose use is always whole: the largest int64
// not above it. A limit between whole numbers (1.5, 1500500m) admits
// exactly what the whole number below it admits, and one beyond an int64
// (1e30) is MaxInt64, which nothing that can be asked reaches.
// Quantity.Value would round the first up and wrap the second.
func QuotaLimit(q resource.Quantity) int64 {
	switch {
	case q.CmpInt64(math.MaxInt64) >= 0:
		return math.MaxInt64
	case q.CmpInt64(math.MinInt64) <= 0:
		return math.MinInt64
	}
	// Value rounds away from zero.
	v := q.Value()
	if q.CmpInt64(v) < 0 {
		v--
	}
	return v
}
