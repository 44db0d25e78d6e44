package meter

import (
	"math"
	"slices"
	"time"
)

// Bucket is one bucket of a cumulative histogram: how many observations
// were at most UpperBound.
type Bucket struct {
	UpperBound      float64
	CumulativeCount uint64
}

// histogramQuantile estimates the q-quantile (0 ≤ q ≤ 1) of a histogram
// from its finite buckets, sorted by bound, and its total count, the way
// Prometheus's histogram_quantile does: it finds the bucket the rank falls
// in and interpolates linearly within it, taking the lower bound of the
// first bucket as 0. Observations above the last finite bound (the +Inf
// bucket, whether listed or not) give that bound. An empty histogram gives NaN.
func histogramQuantile(q float64, buckets []Bucket, total uint64) float64 {
	if total == 0 || len(buckets) == 0 || q < 0 || q > 1 || math.IsNaN(q) {
		return math.NaN()
	}
	rank := q * float64(total)
	lowerBound, lowerCount := 0.0, uint64(0)
	for _, b := range buckets {
		if math.IsInf(b.UpperBound, 1) {
			break
		}
		if float64(b.CumulativeCount) >= rank && b.CumulativeCount > lowerCount {
			inBucket := float64(b.CumulativeCount - lowerCount)
			return lowerBound + (b.UpperBound-lowerBound)*(rank-float64(lowerCount))/inBucket
		}
		lowerBound, lowerCount = b.UpperBound, b.CumulativeCount
	}
	return lowerBound
}

// Quantiles are the median and 99th percentile of a latency.
type Quantiles struct {
	P50, P99 time.Duration
	// Count is the number of observations; 0 means none were made.
	Count uint64
}

// histogramQuantiles are the median and 99th percentile of a histogram in seconds.
func histogramQuantiles(buckets []Bucket, total uint64) Quantiles {
	seconds := func(q float64) time.Duration {
		v := histogramQuantile(q, buckets, total)
		if math.IsNaN(v) {
			return 0
		}
		return time.Duration(v * float64(time.Second))
	}
	return Quantiles{P50: seconds(0.5), P99: seconds(0.99), Count: total}
}

// SampleQuantiles are the nearest-rank median and 99th percentile of
// samples; samples is sorted in place.
func SampleQuantiles(samples []time.Duration) Quantiles {
	if len(samples) == 0 {
		return Quantiles{}
	}
	slices.Sort(samples)
	rank := func(q float64) time.Duration {
		i := int(math.Ceil(q*float64(len(samples)))) - 1
		return samples[max(i, 0)]
	}
	return Quantiles{P50: rank(0.5), P99: rank(0.99), Count: uint64(len(samples))}
}
