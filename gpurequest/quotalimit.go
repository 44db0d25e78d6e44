package gpurequest

import (
	"math"
	"math/big"

	"k8s.io/apimachinery/pkg/api/resource"
)

// QuotaLimit is the whole-number limit a ResourceQuota's hard value sets
// on a GPU quota resource, whose use is always whole: the largest int64
// not above it. A limit between whole numbers (1.5, 1500500m) admits
// exactly what the whole number below it admits, and one beyond an int64
// (1e30) is MaxInt64, which nothing that can be asked reaches.
// Quantity.Value would round the first up and wrap the second, and
// comparing a Quantity of a huge exponent (1E100000000100000) with an
// int64 takes as long as writing out its digits: the limit is worked out
// from the decimal's digits and scale, in time bounded by the digits.
func QuotaLimit(q resource.Quantity) int64 {
	d := q.AsDec()
	digits, scale := d.UnscaledBig(), int64(d.Scale())
	bound := int64(math.MaxInt64)
	if digits.Sign() < 0 {
		bound = math.MinInt64
	}
	var whole *big.Int
	switch {
	case digits.Sign() == 0:
		return 0
	case scale <= 0:
		// An int64 has 19 digits: any more zeros put it beyond.
		if -scale > 19 {
			return bound
		}
		whole = new(big.Int).Mul(digits, pow10(-scale))
	case scale > int64(len(new(big.Int).Abs(digits).Text(10))):
		// Less than one away from zero.
		if digits.Sign() > 0 {
			return 0
		}
		return -1
	default:
		// Euclidean division by a positive divisor rounds down.
		whole, _ = new(big.Int).DivMod(digits, pow10(scale), new(big.Int))
	}
	if !whole.IsInt64() {
		return bound
	}
	return whole.Int64()
}

func pow10(n int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil) }
