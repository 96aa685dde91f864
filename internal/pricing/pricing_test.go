package pricing

import (
	"math"
	"testing"
)

func TestEstimate(t *testing.T) {
	tab, err := New(map[string]Price{"test-model": {Input: 1, Output: 2, CacheRead: 0.5, CacheWrite: 4}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model string
		want  float64
		ok    bool
	}{
		// The longest prefix wins: opus 4.5 is not priced as opus 4.
		{"claude-opus-4-5-20251101", (1e6*5 + 1e6*25 + 1e6*0.5 + 1e6*6.25) / 1e6, true},
		{"claude-opus-4-1-20250805", (1e6*15 + 1e6*75 + 1e6*1.5 + 1e6*18.75) / 1e6, true},
		{"claude-sonnet-5-5", (1e6*2 + 1e6*10 + 1e6*0.2 + 1e6*2.5) / 1e6, true},
		{"test-model", 1 + 2 + 0.5 + 4, true},
		{"Test-Model-2", 1 + 2 + 0.5 + 4, true},
		{"gemini-3-pro", 0, false},
	} {
		got, ok := tab.Estimate(tc.model, 1e6, 1e6, 1e6, 1e6)
		if ok != tc.ok || math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("%s: %v %v, want %v %v", tc.model, got, ok, tc.want, tc.ok)
		}
	}
}

func TestNegativeOverrideIsRefused(t *testing.T) {
	if _, err := New(map[string]Price{"x": {Input: -1}}); err == nil {
		t.Fatal("a negative price was accepted")
	}
}
