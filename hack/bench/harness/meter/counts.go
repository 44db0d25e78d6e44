package meter

import (
	"fmt"
	"strings"
)

// Counts are a counter's values by key, such as requests by resource.
type Counts map[string]float64

// Since is what was counted from before to c.
func (c Counts) Since(before Counts) Counts {
	out := Counts{}
	for k, v := range c {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Total is everything counted.
func (c Counts) Total() float64 {
	var total float64
	for _, v := range c {
		total += v
	}
	return total
}

// PerPod lists the counts per pod by key, the most first.
func (c Counts) PerPod(pods int) string {
	return c.join(func(v float64) string { return fmt.Sprintf("%.2f", v/float64(pods)) })
}

// String lists the counts by key, the most first.
func (c Counts) String() string {
	return c.join(func(v float64) string { return fmt.Sprintf("%g", v) })
}

func (c Counts) join(value func(float64) string) string {
	keys := keysByValue(c)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+" "+value(c[k]))
	}
	return strings.Join(parts, ", ")
}
