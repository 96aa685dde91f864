// Package console is what the operator's console changes from a browser
// or the admin JSON routes: API keys, profiles (a login profile logged in
// through the CLI's own login, relayed to the page), alert sinks and
// model aliases. Keys, sinks and aliases live in the store every host
// shares, so a change reaches every host within a second; profiles and
// their credentials live in this host's data dir, which its profile
// watcher reloads.
package console

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/alerts"
	"github.com/meridian-gw/meridian/internal/apikeys"
	"github.com/meridian-gw/meridian/internal/modelalias"
	"github.com/meridian-gw/meridian/internal/profile"
	"github.com/meridian-gw/meridian/internal/store"
	"github.com/meridian-gw/meridian/internal/weblogin"
)

// Config is what the console reaches.
type Config struct {
	Keys     store.Keys
	Alerts   store.Alerts
	Aliases  store.Aliases
	Profiles *profile.Store
	// LoginCommand is the CLI's login of a login profile; LoggedIn asks
	// the CLI whether a profile is logged in (and why not); Busy whether
	// a turn runs on it.
	LoginCommand func(p profile.Profile) (*exec.Cmd, error)
	LoggedIn     func(ctx context.Context, p profile.Profile) (bool, string)
	Busy         func(ctx context.Context, name string) (bool, error)
	// Logins runs the logins under way.
	Logins *weblogin.Relay
	// Client posts test alerts.
	Client *http.Client
}

// Console runs the operator's changes.
type Console struct{ cfg Config }

// New returns the console over cfg.
func New(cfg Config) *Console {
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: 10 * time.Second}
	}
	return &Console{cfg: cfg}
}

// KeyForm is a key as the console's form and JSON give it; Set names the
// fields a change sets (nil: all of them, as for a new key).
type KeyForm struct {
	Name         string   `json:"name"`
	Profiles     []string `json:"profiles"`
	Models       []string `json:"models"`
	RPM          int      `json:"rpm"`
	Concurrent   int      `json:"concurrent"`
	TokensPerDay int64    `json:"tokens_per_day"`
	Budget       float64  `json:"budget_usd"`
	Per          string   `json:"per"`
	BudgetAlert  float64  `json:"budget_alert_usd"`
	DefaultModel string   `json:"default_model"`
	Capture      string   `json:"capture"`
	// Expires is a date, an RFC 3339 time or a span ("30d"); "" never.
	Expires string   `json:"expires"`
	Set     []string `json:"-"`
}

// Keys lists every key.
func (c *Console) Keys(ctx context.Context) ([]apikeys.View, error) {
	return apikeys.List(ctx, c.cfg.Keys, time.Now())
}

// AddKey makes a key; its view holds the key, shown this once.
func (c *Console) AddKey(ctx context.Context, f KeyForm) (apikeys.View, error) {
	now := time.Now()
	s := apikeys.Spec{Name: f.Name, Profiles: f.Profiles, Models: f.Models, RPM: f.RPM, Concurrent: f.Concurrent,
		TokensPerDay: f.TokensPerDay, Budget: f.Budget, Per: cmp.Or(f.Per, "month"), BudgetAlert: f.BudgetAlert,
		DefaultModel: f.DefaultModel, Capture: f.Capture}
	var err error
	if s.Expires, err = apikeys.ParseExpiry(f.Expires, now); err != nil {
		return apikeys.View{}, err
	}
	return apikeys.Add(ctx, c.cfg.Keys, s, now)
}

// SetKey changes the fields of a key that f.Set names.
func (c *Console) SetKey(ctx context.Context, name string, f KeyForm) (apikeys.View, error) {
	now := time.Now()
	return apikeys.Update(ctx, c.cfg.Keys, name, now, func(s *apikeys.Spec) error {
		var err error
		for _, field := range f.Set {
			switch field {
			case "profiles":
				s.Profiles = f.Profiles
			case "models":
				s.Models = f.Models
			case "rpm":
				s.RPM = f.RPM
			case "concurrent":
				s.Concurrent = f.Concurrent
			case "tokens_per_day":
				s.TokensPerDay = f.TokensPerDay
			case "budget_usd":
				s.Budget, s.BudgetAlert = f.Budget, 0
			case "per":
				s.Per = f.Per
			case "budget_alert_usd":
				s.BudgetAlert = f.BudgetAlert
			case "default_model":
				s.DefaultModel = f.DefaultModel
			case "capture":
				s.Capture = f.Capture
			case "expires":
				s.Expires, err = apikeys.ParseExpiry(f.Expires, now)
			default:
				return fmt.Errorf("a key has no setting %q", field)
			}
		}
		return err
	})
}

// RevokeKey ends a key on every host.
func (c *Console) RevokeKey(ctx context.Context, name string) (apikeys.View, error) {
	return apikeys.Revoke(ctx, c.cfg.Keys, name, time.Now())
}

// RotateKey gives a key a new secret, shown this once.
func (c *Console) RotateKey(ctx context.Context, name string) (apikeys.View, error) {
	return apikeys.Rotate(ctx, c.cfg.Keys, name, time.Now())
}

// Profile is a profile as the console lists it.
type Profile struct {
	profile.Profile
	Default bool `json:"default"`
}

// Profiles lists this host's profiles, the default first among equals.
func (c *Console) Profiles() ([]Profile, error) {
	l, err := c.cfg.Profiles.Read()
	if err != nil {
		return nil, err
	}
	out := make([]Profile, 0, len(l.Profiles))
	for _, p := range l.Profiles {
		out = append(out, Profile{Profile: p, Default: p.Name == l.Default})
	}
	return out, nil
}

// ProfileForm is a profile to add: a token or API key is written to the
// profile's secret file and never shown again; a login profile's login
// starts at once.
type ProfileForm struct {
	Name     string `json:"name"`
	Kind     string `json:"kind"`
	Secret   string `json:"secret"`
	BaseURL  string `json:"base_url"`
	Priority int    `json:"priority"`
	PlanOnly bool   `json:"plan_only"`
}

// AddProfile records a profile on this host; for a login profile it
// starts the CLI's login and returns it.
func (c *Console) AddProfile(f ProfileForm) (*weblogin.View, error) {
	p := profile.Profile{Name: f.Name, Kind: profile.Kind(f.Kind), Priority: f.Priority, BaseURL: f.BaseURL, PlanOnly: f.PlanOnly}
	if p.Kind == profile.Token || p.Kind == profile.API {
		if strings.TrimSpace(f.Secret) == "" {
			return nil, fmt.Errorf("a %s profile needs its %s", p.Kind, map[profile.Kind]string{profile.Token: "token", profile.API: "API key"}[p.Kind])
		}
	}
	if err := c.cfg.Profiles.Add(p, f.Secret); err != nil {
		return nil, err
	}
	if p.Kind != profile.Login {
		return nil, nil
	}
	v, err := c.StartLogin(p.Name)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// ProfileChange is what a change of a profile sets (nil: leave as is).
type ProfileChange struct {
	Priority *int  `json:"priority"`
	PlanOnly *bool `json:"plan_only"`
	Default  bool  `json:"default"`
}

// SetProfile changes a profile's priority, plan-only and whether it is
// the default.
func (c *Console) SetProfile(name string, ch ProfileChange) error {
	if ch.Priority != nil || ch.PlanOnly != nil {
		if _, err := c.cfg.Profiles.Set(name, profile.Settings{Priority: ch.Priority, PlanOnly: ch.PlanOnly}); err != nil {
			return err
		}
	}
	if ch.Default {
		return c.cfg.Profiles.SetDefault(name)
	}
	return nil
}

// RemoveProfile deletes a profile unless a turn runs on it.
func (c *Console) RemoveProfile(ctx context.Context, name string) error {
	return c.cfg.Profiles.Remove(name, func(n string) (bool, error) { return c.cfg.Busy(ctx, n) })
}

// StartLogin starts the CLI's own login of a login profile.
func (c *Console) StartLogin(name string) (weblogin.View, error) {
	_, p, err := c.cfg.Profiles.Find(name)
	if err != nil {
		return weblogin.View{}, err
	}
	cmd, err := c.cfg.LoginCommand(p)
	if err != nil {
		return weblogin.View{}, err
	}
	return c.cfg.Logins.Start(name, cmd, func(ctx context.Context) (bool, string) { return c.cfg.LoggedIn(ctx, p) })
}

// Login is a login's state.
func (c *Console) Login(id string) (weblogin.View, bool) { return c.cfg.Logins.Get(id) }

// LoginCode types the code the sign-in page showed.
func (c *Console) LoginCode(id, code string) (weblogin.View, error) {
	return c.cfg.Logins.Code(id, strings.TrimSpace(code))
}

// Sink is an alert sink as the console shows it: never its secret.
type Sink struct {
	Name    string    `json:"name"`
	URL     string    `json:"url"`
	Format  string    `json:"format"`
	Created time.Time `json:"created"`
}

// Sinks lists the alert sinks.
func (c *Console) Sinks(ctx context.Context) ([]Sink, error) {
	list, _, err := alerts.Sinks(ctx, c.cfg.Alerts, 0)
	out := make([]Sink, 0, len(list))
	for _, s := range list {
		out = append(out, Sink{Name: s.Name, URL: s.URL, Format: s.Format, Created: s.Created})
	}
	return out, err
}

// AddSink adds an alert sink and returns its signing secret, shown once.
func (c *Console) AddSink(ctx context.Context, name, url, format string) (string, error) {
	return alerts.AddSink(ctx, c.cfg.Alerts, name, url, cmp.Or(format, alerts.FormatJSON), time.Now())
}

// RemoveSink deletes an alert sink.
func (c *Console) RemoveSink(ctx context.Context, name string) error {
	return alerts.RemoveSink(ctx, c.cfg.Alerts, name)
}

// TestSink posts a test alert to one sink now.
func (c *Console) TestSink(ctx context.Context, name string) error {
	return alerts.TestSink(ctx, c.cfg.Alerts, c.cfg.Client, name, time.Now())
}

// Aliases lists the stored aliases (the settings file's are per host).
func (c *Console) Aliases(ctx context.Context) ([]modelalias.Alias, error) {
	list, err := c.cfg.Aliases.List(ctx)
	out := make([]modelalias.Alias, 0, len(list))
	for _, a := range list {
		out = append(out, modelalias.Alias{Name: a.Name, Model: a.Model, Effort: a.Effort, Source: modelalias.FromStore})
	}
	return out, err
}

// AddAlias keeps an alias for every host.
func (c *Console) AddAlias(ctx context.Context, name, model, effort string) error {
	return modelalias.Add(ctx, c.cfg.Aliases, name, model, effort, time.Now())
}

// RemoveAlias deletes a stored alias.
func (c *Console) RemoveAlias(ctx context.Context, name string) error {
	return modelalias.Remove(ctx, c.cfg.Aliases, name)
}

// Exists says whether err is about a key, profile, sink or alias of
// that name existing already: the routes answer 409 for it.
func Exists(err error) bool {
	return errors.Is(err, profile.ErrExists) || errors.Is(err, store.ErrConflict) || strings.Contains(err.Error(), " exists")
}

// NotFound says whether err is about a key, profile, sink or alias that
// does not exist: the routes answer 404 for it.
func NotFound(err error) bool {
	if errors.Is(err, profile.ErrUnknown) || errors.Is(err, store.ErrNotFound) {
		return true
	}
	msg := err.Error()
	return slices.ContainsFunc([]string{"no key named", "no alert sink named", "no alias named"}, func(p string) bool { return strings.Contains(msg, p) })
}
