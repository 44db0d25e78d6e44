package meter

import (
	"math"
	"testing"
	"time"
)

func TestHistogramQuantile(t *testing.T) {
	// 10 observations up to 1, 30 more up to 2, 60 more up to 4.
	buckets := []Bucket{{1, 10}, {2, 40}, {4, 100}}
	tests := []struct {
		name    string
		q       float64
		buckets []Bucket
		total   uint64
		want    float64
	}{
		{name: "median interpolates inside the bucket it falls in", q: 0.5, buckets: buckets, total: 100, want: 2 + 2*(50.0-40)/60},
		{name: "rank in the first bucket interpolates from zero", q: 0.05, buckets: buckets, total: 100, want: 0.5},
		{name: "rank on a bucket's upper edge gives that bound", q: 0.4, buckets: buckets, total: 100, want: 2},
		{name: "p99 in the last finite bucket", q: 0.99, buckets: buckets, total: 100, want: 2 + 2*(99.0-40)/60},
		{name: "rank above every finite bucket gives the last bound", q: 0.99, buckets: []Bucket{{1, 10}, {2, 50}}, total: 100, want: 2},
		{name: "a listed +Inf bucket is not interpolated into", q: 0.99, buckets: []Bucket{{1, 10}, {2, 50}, {math.Inf(1), 100}}, total: 100, want: 2},
		{name: "empty buckets before the rank are skipped", q: 0.5, buckets: []Bucket{{1, 0}, {2, 0}, {4, 10}}, total: 10, want: 3},
		{name: "no observations give NaN", q: 0.5, buckets: buckets, total: 0, want: math.NaN()},
		{name: "no buckets give NaN", q: 0.5, total: 3, want: math.NaN()},
		{name: "quantile above one gives NaN", q: 1.5, buckets: buckets, total: 100, want: math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := histogramQuantile(tt.q, tt.buckets, tt.total)
			if math.IsNaN(tt.want) != math.IsNaN(got) || (!math.IsNaN(got) && math.Abs(got-tt.want) > 1e-9) {
				t.Errorf("histogramQuantile(%v) = %v, want %v", tt.q, got, tt.want)
			}
		})
	}
}

func TestHistogramQuantilesInSeconds(t *testing.T) {
	got := histogramQuantiles([]Bucket{{0.001, 50}, {0.002, 100}}, 100)
	want := Quantiles{P50: time.Millisecond, P99: 1980 * time.Microsecond, Count: 100}
	if got != want {
		t.Errorf("histogramQuantiles = %+v, want %+v", got, want)
	}
	if empty := histogramQuantiles(nil, 0); empty != (Quantiles{}) {
		t.Errorf("an empty histogram gives %+v, want zero", empty)
	}
}

func TestSampleQuantiles(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // descending: the function sorts
	}
	tests := []struct {
		name    string
		samples []time.Duration
		want    Quantiles
	}{
		{name: "nearest rank of 100 samples", samples: ms(hundred...), want: Quantiles{P50: 50 * time.Millisecond, P99: 99 * time.Millisecond, Count: 100}},
		{name: "one sample is every quantile", samples: ms(7), want: Quantiles{P50: 7 * time.Millisecond, P99: 7 * time.Millisecond, Count: 1}},
		{name: "p99 of few samples is the largest", samples: ms(3, 1, 2), want: Quantiles{P50: 2 * time.Millisecond, P99: 3 * time.Millisecond, Count: 3}},
		{name: "no samples give zero", want: Quantiles{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SampleQuantiles(tt.samples); got != tt.want {
				t.Errorf("sampleQuantiles = %+v, want %+v", got, tt.want)
			}
		})
	}
}
