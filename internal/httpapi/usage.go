package httpapi

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gw/meridian/internal/apikeys"
	"github.com/meridian-gw/meridian/internal/gateway"
	"github.com/meridian-gw/meridian/internal/keyrule"
	"github.com/meridian-gw/meridian/internal/telemetry"
	"github.com/meridian-gw/meridian/internal/telemetry/history"
	"github.com/meridian-gw/meridian/internal/web"
)

// usageRoutes are what an operator or a key's holder reads about use:
// every key's figures, a key's own (and its page), and the plans' quota.
type usageRoutes struct {
	keys      apikeys.Keys // nil without keys
	access    *access
	history   *history.History // nil: telemetry is not kept
	telemetry *telemetryRoutes
	site      *pageRoutes
	backends  *backends
	log       *slog.Logger
}

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
func (s *usageRoutes) usageKeys(w http.ResponseWriter, r *http.Request) {
	window, ok := s.telemetry.window(w, r)
	if !ok {
		return
	}
	now := time.Now()
	rows, err := s.history.ByKey(r.Context(), now.Add(-window))
	if err != nil {
		failWith(s.log, w, r, err)
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
	if s.keys != nil {
		list, err := s.keys.List(r.Context())
		if err != nil {
			failWith(s.log, w, r, err)
			return
		}
		for _, k := range list {
			u := used[k.Name]
			u.Name, u.Status = k.Name, keyrule.State(k.Revoked, k.Expires, now)
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

// ownKey is GET /v1/usage/key: the key a request carries, its scope and
// limits, where its limits stand now, and its use over the window.
type ownKey struct {
	Name         string     `json:"name"`
	Profiles     []string   `json:"profiles"`
	Models       []string   `json:"models"`
	RPM          int        `json:"rpm"`
	Concurrent   int        `json:"concurrent"`
	TokensPerDay int64      `json:"tokens_per_day"`
	Expires      *time.Time `json:"expires,omitempty"`
	// Budget is its dollar budget per Per, absent without one.
	Budget *keyBudget `json:"budget,omitempty"`
	// Now is what its limits count at this moment.
	Now struct {
		RequestsLastMinute int   `json:"requests_last_minute"`
		Running            int   `json:"running"`
		TokensToday        int64 `json:"tokens_today"`
	} `json:"now"`
	Usage keyUsage `json:"usage"`
}

// keyBudget is a key's dollar budget and where its period stands, in
// US dollars of API-equivalent cost.
type keyBudget struct {
	USD     float64   `json:"usd"`
	AlertAt float64   `json:"alert_at_usd"`
	Per     string    `json:"per"`
	Spent   float64   `json:"spent_usd"`
	Resets  time.Time `json:"resets_at"`
}

// usageOwnKey serves GET /v1/usage/key to a person's or tool's key: its
// own figures only.
func (s *usageRoutes) usageOwnKey(w http.ResponseWriter, r *http.Request) {
	k := caller(r.Context())
	if k == nil {
		failWith(s.log, w, r, gateway.InvalidRequest("this route reports the API key a request carries, made by `meridian key`; the admin key is none: GET /v1/usage/keys reports them all"))
		return
	}
	window, werr := windowParam(r)
	if werr != nil {
		failWith(s.log, w, r, werr)
		return
	}
	out, err := s.ownFigures(r.Context(), *k, window)
	if err != nil {
		failWith(s.log, w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// ownFigures are one key's scope, limits, where they stand and its use
// over the window.
func (s *usageRoutes) ownFigures(ctx context.Context, k apikeys.Key, window time.Duration) (ownKey, error) {
	now := time.Now()
	out := ownKey{Name: k.Name, Profiles: k.Profiles, Models: k.Models, RPM: k.RPM, Concurrent: k.Concurrent,
		TokensPerDay: k.TokensPerDay, Usage: keyUsage{Name: k.Name, Status: keyrule.State(k.Revoked, k.Expires, now)}}
	if !k.Expires.IsZero() {
		e := k.Expires.UTC()
		out.Expires = &e
	}
	if out.Profiles == nil {
		out.Profiles = []string{}
	}
	if out.Models == nil {
		out.Models = []string{}
	}
	standing, err := s.access.admission.Standing(ctx, k, now)
	if err != nil {
		return out, err
	}
	out.Now.RequestsLastMinute, out.Now.Running, out.Now.TokensToday = standing.RequestsLastMinute, standing.Running, standing.TokensToday
	if k.Budget > 0 {
		out.Budget = &keyBudget{USD: keyrule.Dollars(k.Budget), AlertAt: keyrule.Dollars(k.BudgetAlert), Per: k.Per,
			Spent: keyrule.Dollars(standing.Spent), Resets: standing.Resets}
	}
	if s.history == nil {
		return out, nil
	}
	rows, err := s.history.ByKey(ctx, now.Add(-window))
	if err != nil {
		return out, err
	}
	for _, row := range rows {
		if row.Key == k.Name {
			last := row.Last.UTC()
			out.Usage = keyUsage{Name: k.Name, Status: out.Usage.Status, Requests: row.Requests, Errors: row.Errors, CostUSD: row.Cost,
				LastUsed: &last, Tokens: telemetry.Tokens{Input: row.Input, Output: row.Output, CacheRead: row.CacheRead, CacheWrite: row.Cache}}
		}
	}
	return out, nil
}

// keyPage serves GET /key: the page of the key a browser signed in with
// (its cookie) or a request carries; otherwise the sign-in form.
func (s *usageRoutes) keyPage(w http.ResponseWriter, r *http.Request) {
	k := caller(r.Context())
	if k == nil {
		if found, ok := s.access.keyOfCookie(r); ok {
			k = &found
		}
	}
	if k == nil || s.keys == nil {
		s.site.page(w, r, http.StatusUnauthorized, func(b *bytes.Buffer) error {
			return s.site.pages.RenderSignIn(b, s.site.bare(), s.site.signInForm(r, "/key", false))
		})
		return
	}
	f, err := s.ownFigures(r.Context(), *k, defaultWindow)
	if err != nil {
		failWith(s.log, w, r, err)
		return
	}
	p := web.KeyPage{Name: f.Name, Status: f.Usage.Status, Profiles: f.Profiles, Models: f.Models, RPM: f.RPM, Concurrent: f.Concurrent,
		TokensPerDay: f.TokensPerDay, LastMinute: f.Now.RequestsLastMinute, Running: f.Now.Running, TokensToday: f.Now.TokensToday,
		Requests: f.Usage.Requests, Errors: f.Usage.Errors, Input: f.Usage.Tokens.Input, Output: f.Usage.Tokens.Output,
		CacheRead: f.Usage.Tokens.CacheRead, CacheWrite: f.Usage.Tokens.CacheWrite, Cost: f.Usage.CostUSD}
	if b := f.Budget; b != nil {
		p.Budget = fmt.Sprintf("$%.2f of $%.2f this %s (alert at $%.2f; renews %s)", b.Spent, b.USD, b.Per, b.AlertAt, b.Resets.Format("Jan 2 15:04 UTC"))
	}
	if f.Expires != nil {
		p.Expires = f.Expires.Format(time.DateTime + " UTC")
	}
	if f.Usage.LastUsed != nil {
		p.LastUsed = f.Usage.LastUsed.Format(time.DateTime + " UTC")
	}
	s.site.page(w, r, http.StatusOK, func(b *bytes.Buffer) error { return s.site.pages.RenderKey(b, s.site.bare(), p) })
}

// profileQuota is one profile's part of GET /v1/usage/quota.
type profileQuota struct {
	Profile string               `json:"profile"`
	Windows []gateway.RateWindow `json:"windows"`
	Plan    *gateway.PlanReading `json:"plan"`
}

// quota serves GET /v1/usage/quota, per profile (or the one the request
// names): the rate-limit windows the CLI reported on its latest turns
// (rate_limit_event, with when each was seen), and the plan's limits as
// the CLI's /usage reads them (a probe per profile, one at a time, trusted
// for a minute; when it fails the last good reading is served with
// "stale": true). Profiles are read side by side.
func (s *usageRoutes) quota(w http.ResponseWriter, r *http.Request) {
	gws := s.backends.profiles()
	if gw, ok := r.Context().Value(profileKey{}).(*gateway.Gateway); ok {
		gws = []*gateway.Gateway{gw}
	}
	out := make([]profileQuota, len(gws))
	var wg sync.WaitGroup
	for i, gw := range gws {
		wg.Go(func() {
			out[i] = profileQuota{Profile: gw.Profile(), Windows: gw.RateWindows(), Plan: gw.Plan(r.Context())}
		})
	}
	wg.Wait()
	cli := s.backends.dispatch.Default().CLI()
	writeJSON(w, http.StatusOK, map[string]any{"profiles": out, "as_of": time.Now().UTC(),
		"sources": map[string]string{"windows": cli.WindowSource, "plan": cli.PlanSource}})
}
