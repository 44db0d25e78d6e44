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
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := QuotaLimit(resource.MustParse(tc.value)); got != tc.want {
				t.Errorf("QuotaLimit(%s) = %d, want %d", tc.value, got, tc.want)
			}
		})
	}
}
