package httpapi

import (
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/meridian-gw/meridian/internal/telemetry"
)

// keyUsage is one API key's use over the window of GET /v1/usage/keys.
type keyUsage struct {
	// Name is the key's name; "" sums the requests that came with the
	// admin key or with none.
	Name     string           `json:"name"`
	Status   string           `json:"status,omitempty"` // active, revoked, expired; "" for no key
	Requests int64            `json:"requests"`
	Errors   int64            `json:"errors"`
	Tokens   telemetry.Tokens `json:"tokens"`
	// CostUSD is the API-equivalent list price of the tokens: an
	// estimate.
	CostUSD  float64    `json:"cost_usd"`
	LastUsed *time.Time `json:"last_used"`
}

type keysUsage struct {
	From time.Time  `json:"from"`
	To   time.Time  `json:"to"`
	Keys []keyUsage `json:"keys"`
}

// usageKeys serves GET /v1/usage/keys (admin): every key's requests,
// tokens by kind, API-equivalent cost, errors and last use over the window
// (?window=, 24h by default), from every host's records; keys unused in
// it are listed with zeros.
func (s *Server) usageKeys(w http.ResponseWriter, r *http.Request) {
	if s.cfg.History == nil {
		s.fail(w, r, telemetryOff())
		return
	}
	window, werr := windowParam(r)
	if werr != nil {
		s.fail(w, r, werr)
		return
	}
	now := time.Now()
	rows, err := s.cfg.History.ByKey(r.Context(), now.Add(-window))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	out := keysUsage{From: now.Add(-window).UTC(), To: now.UTC(), Keys: []keyUsage{}}
	used := map[string]keyUsage{}
	for _, row := range rows {
		last := row.Last.UTC()
		used[row.Key] = keyUsage{Name: row.Key, Requests: row.Requests, Errors: row.Errors, CostUSD: row.Cost, LastUsed: &last,
			Tokens: telemetry.Tokens{Input: row.Input, Output: row.Output, CacheRead: row.CacheRead, CacheWrite: row.Cache}}
	}
	if u, ok := used[""]; ok {
		out.Keys = append(out.Keys, u)
	}
	if s.cfg.Keys != nil {
		list, err := s.cfg.Keys.List(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		for _, k := range list {
			u := used[k.Name]
			u.Name, u.Status = k.Name, "active"
			switch {
			case !k.Revoked.IsZero():
				u.Status = "revoked"
			case !k.Expires.IsZero() && !now.Before(k.Expires):
				u.Status = "expired"
			}
			out.Keys = append(out.Keys, u)
			delete(used, k.Name)
		}
	}
	// Records of keys since removed from the store still count.
	for _, name := range slices.Sorted(maps.Keys(used)) {
		if name != "" {
			out.Keys = append(out.Keys, used[name])
		}
	}
	writeJSON(w, http.StatusOK, out)
}
