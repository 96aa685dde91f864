package claude

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gw/meridian/internal/backend"
)

// usageRequest asks the CLI for its /usage figures. Only the plan's rate
// limits are wanted: skip_behaviors spares it a scan of a week of local
// transcripts.
type usageRequest struct {
	Subtype       string `json:"subtype"`
	SkipBehaviors bool   `json:"skip_behaviors"`
}

// usageReply is the part of the CLI's get_usage answer read here.
type usageReply struct {
	SubscriptionType    *string                    `json:"subscription_type"`
	RateLimitsAvailable bool                       `json:"rate_limits_available"`
	RateLimits          map[string]json.RawMessage `json:"rate_limits"`
}

type usageWindow struct {
	Utilization *float64 `json:"utilization"`
	ResetsAt    *string  `json:"resets_at"`
	DisplayName string   `json:"display_name"`
}

type extraUsage struct {
	IsEnabled    bool     `json:"is_enabled"`
	MonthlyLimit *float64 `json:"monthly_limit"`
	UsedCredits  *float64 `json:"used_credits"`
	Utilization  *float64 `json:"utilization"`
	Currency     *string  `json:"currency"`
}

// PlanUsage starts a CLI process in this driver's environment only to ask
// it what /usage shows of the plan's limits. The CLI reads them from the
// account's usage endpoint (an API-key login has none), so this costs no
// model request.
func (d *Driver) PlanUsage(ctx context.Context) (backend.PlanUsage, error) {
	p, err := d.launch(ctx, backend.StartOptions{})
	if err != nil {
		return backend.PlanUsage{}, err
	}
	defer p.Close()
	if err := p.initialize(nil, nil); err != nil {
		return backend.PlanUsage{}, errors.New(p.exitError())
	}
	raw, err := p.request(ctx, "usage_", usageRequest{Subtype: "get_usage", SkipBehaviors: true})
	if err != nil {
		return backend.PlanUsage{}, err
	}
	return parseUsage(raw)
}

// parseUsage reads the windows of a get_usage answer, in a stable order.
func parseUsage(raw json.RawMessage) (backend.PlanUsage, error) {
	var r usageReply
	if err := json.Unmarshal(raw, &r); err != nil {
		return backend.PlanUsage{}, fmt.Errorf("claude get_usage reply: %w", err)
	}
	u := backend.PlanUsage{Available: r.RateLimitsAvailable}
	if r.SubscriptionType != nil {
		u.Subscription = *r.SubscriptionType
	}
	for name, v := range r.RateLimits {
		switch name {
		case "extra_usage":
			var e *extraUsage
			if json.Unmarshal(v, &e) == nil && e != nil {
				u.ExtraUsage = &backend.ExtraUsage{Enabled: e.IsEnabled, MonthlyLimit: e.MonthlyLimit, UsedCredits: e.UsedCredits, Utilization: e.Utilization}
				if e.Currency != nil {
					u.ExtraUsage.Currency = *e.Currency
				}
			}
		case "model_scoped":
			var ws []usageWindow
			if json.Unmarshal(v, &ws) == nil {
				for _, w := range ws {
					u.Windows = append(u.Windows, planWindow(w.DisplayName, w))
				}
			}
		default:
			var w *usageWindow
			if json.Unmarshal(v, &w) == nil && w != nil {
				u.Windows = append(u.Windows, planWindow(name, *w))
			}
		}
	}
	slices.SortFunc(u.Windows, func(a, b backend.PlanWindow) int {
		return cmp.Or(windowRank(a.Name)-windowRank(b.Name), strings.Compare(a.Name, b.Name))
	})
	return u, nil
}

func planWindow(name string, w usageWindow) backend.PlanWindow {
	pw := backend.PlanWindow{Name: name, Utilization: w.Utilization}
	if w.ResetsAt != nil {
		if t, err := time.Parse(time.RFC3339, *w.ResetsAt); err == nil {
			pw.ResetsAt = &t
		}
	}
	return pw
}

// windowRank orders the plan's windows shortest first, model buckets last.
func windowRank(name string) int {
	switch name {
	case "five_hour":
		return 0
	case "seven_day":
		return 1
	case "seven_day_opus":
		return 2
	case "seven_day_sonnet":
		return 3
	case "seven_day_oauth_apps":
		return 4
	}
	return 5
}
