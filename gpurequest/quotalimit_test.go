package gpurequest

import (
	"math"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
)

func TestQuotaLimit(t *testing.T) {
	tests := []struct {
		name  string
		value string
		want  int64
	}{
		{"a whole number is itself", "40000", 40000},
		{"a suffix is read", "40k", 40000},
		{"a fraction admits the whole number below it", "1.5", 1},
		{"milli-units admit the whole number below them", "1500500m", 1500},
		{"a fraction below one admits nothing", "0.5", 0},
		{"a negative fraction is below zero", "-0.5", -1},
		{"the largest int64 is itself", "9223372036854775807", math.MaxInt64},
		{"beyond an int64 is the largest int64, not a wrapped value", "92233720368547758070", math.MaxInt64},
		{"an exponent beyond an int64 is the largest int64", "1e30", math.MaxInt64},
		{"a binary suffix beyond an int64 is the largest int64", "8Ei", math.MaxInt64},
		{"below an int64 is the smallest int64", "-1e30", math.MinInt64},
		{"an exponent too large to write out is the largest int64", "1E100000000100000", math.MaxInt64},
		{"a negative one is the smallest int64", "-1E100000000100000", math.MinInt64},
		{"zero is zero, however large its exponent", ".E100000000100000", 0},
		{"a fraction of many digits admits nothing", "0.000000000000000000000000000001", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := QuotaLimit(resource.MustParse(tc.value)); got != tc.want {
				t.Errorf("QuotaLimit(%s) = %d, want %d", tc.value, got, tc.want)
			}
		})
	}
}

// FuzzQuotaLimit reads quantities of any digits and any scale, to the
// extremes of an int32 exponent, at once: the limit is the largest int64
// not above the quantity, never a wrapped or rounded-up value (checked
// where Quantity's own comparison is quick). The quantities are built,
// not parsed: ParseQuantity itself takes unbounded time on some
// exponents (1e15777777771), before any quota is read.
func FuzzQuotaLimit(f *testing.F) {
	for _, seed := range []struct {
		value int64
		scale int32
	}{{0, 0}, {40000, 0}, {15, -1}, {-5, -1}, {1500500, -3}, {1, 30}, {-1, 30}, {1, math.MaxInt32}, {-1, math.MinInt32}, {math.MaxInt64, 1}} {
		f.Add(seed.value, seed.scale)
	}
	f.Fuzz(func(t *testing.T, value int64, scale int32) {
		q := resource.NewScaledQuantity(value, resource.Scale(scale))
		got := QuotaLimit(*q)
		if scale < -40 || scale > 40 {
			return
		}
		switch {
		case got == math.MaxInt64:
			if q.CmpInt64(math.MaxInt64) < 0 {
				t.Errorf("QuotaLimit(%s) = MaxInt64, but it is below", q)
			}
		case got == math.MinInt64:
			if q.CmpInt64(math.MinInt64+1) >= 0 {
				t.Errorf("QuotaLimit(%s) = MinInt64, but it is at least MinInt64+1", q)
			}
		case q.CmpInt64(got) < 0 || q.CmpInt64(got+1) >= 0:
			t.Errorf("QuotaLimit(%s) = %d, want the largest whole number not above it", q, got)
		}
	})
}
