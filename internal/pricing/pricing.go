// Package pricing estimates what a request's tokens would cost at the
// Anthropic API's list prices. The figure is an estimate: a subscription
// user pays no such amount, so pages call it the API-equivalent cost. The
// table is data in the binary; a user's config file may override or add
// rows.
package pricing

import (
	"fmt"
	"sort"
	"strings"
)

// Price is a model family's list price in US dollars per million tokens.
type Price struct {
	Input      float64 `toml:"input" json:"input"`
	Output     float64 `toml:"output" json:"output"`
	CacheRead  float64 `toml:"cache_read" json:"cache_read"`
	CacheWrite float64 `toml:"cache_write" json:"cache_write"`
}

// list makes a row from input and output prices with the API's usual
// cache multipliers: reads at a tenth of input, five-minute writes at 1.25×.
func list(input, output float64) Price {
	return Price{Input: input, Output: output, CacheRead: input / 10, CacheWrite: input * 1.25}
}

// Builtin is the table in the binary, keyed by model id prefix: the
// longest prefix that matches a model id prices it. The 5.x rows are the
// prices the pinned CLI's model list shows; the older rows are the API's
// published ones.
func Builtin() map[string]Price {
	return map[string]Price{
		"claude-opus-5":     list(4, 20),
		"claude-sonnet-5":   list(2, 10),
		"claude-haiku-5":    list(0.10, 0.50),
		"claude-opus-4-5":   list(5, 25),
		"claude-opus-4-6":   list(5, 25),
		"claude-opus-4":     list(15, 75),
		"claude-sonnet-4":   list(3, 15),
		"claude-haiku-4":    list(1, 5),
		"claude-3-7-sonnet": list(3, 15),
		"claude-3-5-sonnet": list(3, 15),
		"claude-3-5-haiku":  list(0.80, 4),
		"claude-3-haiku":    list(0.25, 1.25),
		"claude-3-opus":     list(15, 75),
	}
}

// Table prices model ids by longest matching prefix.
type Table struct {
	prefixes []string // longest first
	rows     map[string]Price
}

// New returns the builtin table with overrides laid over it (an override
// replaces or adds a row). A negative price in an override is an error.
func New(overrides map[string]Price) (*Table, error) {
	rows := Builtin()
	for k, p := range overrides {
		if p.Input < 0 || p.Output < 0 || p.CacheRead < 0 || p.CacheWrite < 0 {
			return nil, fmt.Errorf("pricing %q: prices cannot be negative", k)
		}
		rows[strings.ToLower(k)] = p
	}
	t := &Table{rows: rows}
	for k := range rows {
		t.prefixes = append(t.prefixes, k)
	}
	sort.Slice(t.prefixes, func(i, j int) bool {
		if len(t.prefixes[i]) != len(t.prefixes[j]) {
			return len(t.prefixes[i]) > len(t.prefixes[j])
		}
		return t.prefixes[i] < t.prefixes[j]
	})
	return t, nil
}

// Lookup finds the price of a model id.
func (t *Table) Lookup(model string) (Price, bool) {
	m := strings.ToLower(model)
	for _, p := range t.prefixes {
		if strings.HasPrefix(m, p) {
			return t.rows[p], true
		}
	}
	return Price{}, false
}

// Estimate is the cost in US dollars of the tokens at model's price, or
// ok false when no price is known.
func (t *Table) Estimate(model string, input, output, cacheRead, cacheWrite int64) (usd float64, ok bool) {
	p, ok := t.Lookup(model)
	if !ok {
		return 0, false
	}
	return (float64(input)*p.Input + float64(output)*p.Output +
		float64(cacheRead)*p.CacheRead + float64(cacheWrite)*p.CacheWrite) / 1e6, true
}
