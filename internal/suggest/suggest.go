// Package suggest finds the name a person meant when they typed a near
// miss: a client, a route, a model.
package suggest

import "strings"

// Nearest is the candidate name meant: one that starts with name, else
// one within two edits of it; "" when none is close.
func Nearest(name string, candidates []string) string {
	name = strings.ToLower(name)
	best, bestDist := "", 3
	for _, c := range candidates {
		if name != "" && strings.HasPrefix(c, name) {
			return c
		}
		if d := distance(name, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// distance is the Levenshtein distance between a and b.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
