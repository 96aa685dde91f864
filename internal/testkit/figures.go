package testkit

import (
	"slices"
	"time"
)

// Median is the middle of d (the upper one of an even count).
func Median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// Millis is d in milliseconds, to the microsecond: a benchmark's metric.
func Millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
